// feed_vs_prefetch and quickstart as data-parallel programs, on a machine without a GPU: the JSON fields
// the scaling run reads (the process's place in the job, every step's loss, each GPU's idle share), and
// what they refuse with a message that says why.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor::train {
namespace {

using testing::ProcessResult;

class DataParallelPrograms : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 6; ++i)
        testing::write_file(dir / "photos" / ("class_" + std::to_string(c)) / (std::to_string(i) + ".jpg"),
                            testing::make_jpeg(40, 48, 3, static_cast<std::uint64_t>(10 * c + i + 1)));
  }

  ProcessResult feed_vs_prefetch(std::vector<std::string> args,
                                 const std::vector<std::string>& environment = {}) {
    args.insert(args.begin(), {testing::program_path("CONVEYOR_FEED_VS_PREFETCH", CONVEYOR_FEED_VS_PREFETCH),
                               "--data", (dir / "photos").string()});
    return testing::run_process(args, environment, std::chrono::seconds(90));
  }

  testing::TempDir dir;
};

const std::vector<std::string> kLauncherRank1{
    "RANK=1",           "WORLD_SIZE=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
    "MASTER_PORT=29500"};

TEST_F(DataParallelPrograms, FeedVsPrefetchRecordsEveryStepsLossAndItsPlaceInTheJob) {
  testing::Watchdog watchdog(std::chrono::seconds(120), "feed_vs_prefetch --record-loss");
  const std::string json = (dir / "run.json").string();
  const ProcessResult result =
      feed_vs_prefetch({"--device", "cpu", "--modes",  "prefetch", "--threads",       "2",
                        "--batch",  "4",   "--warmup", "1",        "--steps",         "3",
                        "--size",   "16",  "--width",  "4",        "--deterministic", "--record-loss",
                        "--json",   json});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  std::ifstream in(json);
  const nlohmann::json run = nlohmann::json::parse(in);
  EXPECT_EQ(run["world_size"], 1);
  EXPECT_EQ(run["rank"], 0);
  EXPECT_EQ(run["gpus_in_process"], 1);
  EXPECT_EQ(run["deterministic"], true);
  EXPECT_EQ(run["pipeline_deterministic"], true)
      << "--record-loss and --deterministic keep the batches fixed";
  const nlohmann::json& prefetch = run["results"][0];
  EXPECT_EQ(prefetch["mode"], "prefetch");
  ASSERT_EQ(prefetch["losses"].size(), 4u) << "one loss per step, the warm-up step included";
  for (const auto& loss : prefetch["losses"]) EXPECT_GT(loss.get<double>(), 0.0);
  // The scalar fields are written with 6 significant digits, the lists in full.
  EXPECT_NEAR(prefetch["losses"].back().get<double>(), prefetch["loss_last"].get<double>(), 1e-5);
  ASSERT_EQ(prefetch["idle_per_gpu"].size(), 1u);
  EXPECT_NEAR(prefetch["idle_per_gpu"][0].get<double>(), prefetch["idle_fraction"].get<double>(), 1e-5);
}

TEST_F(DataParallelPrograms, FeedVsPrefetchRefusesDataParallelWithoutGpusOrInTheNaiveModes) {
  testing::Watchdog watchdog(std::chrono::seconds(120), "feed_vs_prefetch refusals");
  ProcessResult result = feed_vs_prefetch({"--device", "cpu", "--gpus", "2"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("data parallel training needs GPUs"), std::string::npos) << result.err;
  result = feed_vs_prefetch({"--device", "cpu", "--gpus", "2", "--modes", "feed,prefetch"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("runs the prefetch mode only"), std::string::npos) << result.err;
  result = feed_vs_prefetch({"--gpus", "2"}, kLauncherRank1);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("each rank trains on one GPU (its LOCAL_RANK)"), std::string::npos) << result.err;
}

TEST_F(DataParallelPrograms, QuickstartRefusesGpusUnderALauncher) {
  testing::Watchdog watchdog(std::chrono::seconds(60), "quickstart under a launcher");
  const ProcessResult result =
      testing::run_process({testing::program_path("CONVEYOR_QUICKSTART", CONVEYOR_QUICKSTART),
                            (dir / "photos").string(), "2", "--gpus", "2"},
                           kLauncherRank1, std::chrono::seconds(30));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("each process trains on one GPU"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace conveyor::train
