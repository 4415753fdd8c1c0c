// The examples, run as a user would run them, on data with a bad file: with on_error = fail (their
// default) they exit non-zero, and the message names the file, the stage and the reason.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "jpeg_variants.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `command` through the shell with its output captured in `dir`.
Outcome run(const std::string& command, const fs::path& dir) {
  const fs::path log = dir / "output.log";
  const int status = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
  Outcome outcome;
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(log);
  outcome.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return outcome;
}

// The example program: where the build put it, or $VARIABLE when set (a copy of the test run elsewhere,
// e.g. on the GPU machine by scripts/gpu_test_run.sh).
std::string example(const char* variable, const char* built) {
  const char* moved = std::getenv(variable);
  return moved != nullptr && *moved != '\0' ? moved : built;
}

// A truncated JPEG: the header is intact, the scan ends after a few bytes.
testing::Bytes broken_jpeg(int height, int width, int channels) {
  const testing::Bytes jpeg = testing::make_jpeg(height, width, channels, 99);
  return testing::first_bytes(jpeg, testing::scan_data_offset(jpeg) + 8);
}

class FeedVsPrefetch : public ::testing::TestWithParam<const char*> {};

TEST_P(FeedVsPrefetch, ExitsNonZeroNamingTheBadFileStageAndReason) {
  testing::TempDir dir;
  for (int i = 0; i < 3; ++i)
    testing::write_file(dir / "photos" / "class_a" / ("good" + std::to_string(i) + ".jpg"),
                        testing::make_jpeg(40, 48, 3, i + 1));
  const fs::path bad = dir / "photos" / "class_a" / "broken.jpg";
  testing::write_file(bad, broken_jpeg(40, 48, 3));
  // 3 steps of 2 images read 6 elements of the 4-image folder: the broken one is always among them.
  const std::string command = "'" + example("CONVEYOR_FEED_VS_PREFETCH", CONVEYOR_FEED_VS_PREFETCH) +
                              "' --data '" + (dir / "photos").string() + "' --device cpu --modes " +
                              GetParam() + " --threads 2 --batch 2 --warmup 1 --steps 2 --size 16 --width 4";
  const testing::Watchdog watchdog(std::chrono::seconds(120), command);
  const Outcome outcome = run(command, dir.path());
  EXPECT_NE(outcome.exit_code, 0) << outcome.output;
  EXPECT_NE(outcome.output.find("'" + bad.string() + "'"), std::string::npos) << outcome.output;
  EXPECT_NE(outcome.output.find("stage 'decode_random_resized_crop'"), std::string::npos) << outcome.output;
  EXPECT_NE(outcome.output.find("(truncated)"), std::string::npos) << outcome.output;
}

INSTANTIATE_TEST_SUITE_P(Modes, FeedVsPrefetch, ::testing::Values("prefetch", "feed", "parallel"),
                         [](const auto& info) { return std::string(info.param); });

TEST(TrainFashionMnist, ExitsNonZeroNamingTheBadFileStageAndReason) {
  testing::TempDir dir;
  std::string train, test;
  for (int i = 0; i < 6; ++i) {
    const std::string name = "img" + std::to_string(i) + ".jpg";
    testing::write_file(dir / name, testing::make_jpeg(28, 28, 1, i + 1));
    (i < 4 ? train : test) += name + " " + std::to_string(i % 10) + "\n";
  }
  const fs::path bad = dir / "broken.jpg";
  testing::write_file(bad, broken_jpeg(28, 28, 1));
  train += "broken.jpg 3\n";
  testing::write_file(dir / "train.txt", std::vector<std::uint8_t>(train.begin(), train.end()));
  testing::write_file(dir / "test.txt", std::vector<std::uint8_t>(test.begin(), test.end()));
  const std::string command = "'" + example("CONVEYOR_TRAIN_FASHION_MNIST", CONVEYOR_TRAIN_FASHION_MNIST) +
                              "' --data '" + dir.path().string() +
                              "' --device cpu --epochs 1 --batch 1 --threads 2 --width 4";
  const testing::Watchdog watchdog(std::chrono::seconds(120), command);
  const Outcome outcome = run(command, dir.path());
  EXPECT_NE(outcome.exit_code, 0) << outcome.output;
  EXPECT_NE(outcome.output.find("'" + bad.string() + "'"), std::string::npos) << outcome.output;
  EXPECT_NE(outcome.output.find("stage 'decode'"), std::string::npos) << outcome.output;
  EXPECT_NE(outcome.output.find("(truncated)"), std::string::npos) << outcome.output;
}

}  // namespace
}  // namespace conveyor
