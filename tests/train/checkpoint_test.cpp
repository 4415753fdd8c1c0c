// Trainer checkpoints: a run stopped, checkpointed and resumed in a new process takes the same steps as an
// uninterrupted one (losses and weights bit for bit, on the deterministic CPU reference, with the data
// iterator resumed too); the weights file is safetensors in PyTorch's names and layouts; a missing,
// truncated or damaged checkpoint is refused naming the file and the problem, and the trainer is unchanged.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/train/trainer.h"
#include "src/train/safetensors.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "tests/train/synthetic_batches.h"

namespace conveyor::train {
namespace {

constexpr ImageShape kShape{8, 8, 1};

TrainerOptions tiny_options(std::uint64_t seed = 1) {
  TrainerOptions o;
  o.num_classes = 4;
  o.input = kShape;
  o.batch = 16;
  o.width = 4;
  o.blocks_per_stage = 1;
  o.learning_rate = 0.05;
  o.seed = seed;
  return o;
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Runs a command, returning its standard output; fails the test when it exits non-zero.
std::string run(const std::string& command) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  EXPECT_TRUE(pipe) << command;
  std::string out;
  char buffer[4096];
  while (pipe && std::fgets(buffer, sizeof buffer, pipe.get())) out += buffer;
  const int status = ::pclose(pipe.release());
  EXPECT_EQ(status, 0) << command << "\n" << out;
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Checkpoint, ARunResumedInANewProcessTakesExactlyTheStepsOfAnUninterruptedOne) {
  const testing::TempDir dir;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 9; ++i)
      testing::write_file(dir / "images" / ("class_" + std::to_string(c)) / (std::to_string(i) + ".jpg"),
                          testing::make_jpeg(24 + 3 * i, 30, 3, static_cast<std::uint64_t>(c * 100 + i)));
  const std::string tool = testing::program_path("CONVEYOR_RESUME_TOOL", CONVEYOR_RESUME_TOOL),
                    data = (dir / "images").string();
  // 9 steps of 8 from 27 images: the run crosses two epochs of the shuffled data.
  const std::vector<std::string> whole =
      lines(run(tool + " " + data + " 9 2 " + (dir / "whole.json").string()));
  std::vector<std::string> parts = lines(run(tool + " " + data + " 4 3 " + (dir / "part.json").string()));
  const std::vector<std::string> rest = lines(
      run(tool + " " + data + " 9 1 " + (dir / "rest.json").string() + " " + (dir / "part.json").string()));
  parts.insert(parts.end(), rest.begin(), rest.end());
  ASSERT_EQ(whole.size(), 9u);
  EXPECT_EQ(parts, whole);  // the same losses, printed to the last bit
  ASSERT_TRUE(std::filesystem::exists(dir / "whole.step-000000000009.safetensors"));
  ASSERT_TRUE(std::filesystem::exists(dir / "rest.step-000000000009.safetensors"));
  EXPECT_TRUE(read_bytes(dir / "whole.step-000000000009.safetensors") ==
              read_bytes(dir / "rest.step-000000000009.safetensors"))
      << "the weights after 9 steps differ";
  EXPECT_TRUE(read_bytes(dir / "whole.step-000000000009.optimizer.safetensors") ==
              read_bytes(dir / "rest.step-000000000009.optimizer.safetensors"))
      << "the momentum after 9 steps differs";
}

TEST(Checkpoint, TheWeightsAreSafetensorsInPyTorchsNamesShapesAndLayout) {
  const testing::TempDir dir;
  Trainer trainer(tiny_options());
  trainer.step(testing::quadrant_batch(16, kShape, 1).staged());
  trainer.save_checkpoint(dir / "ckpt.json", {.steps = 1});
  const std::string bytes = read_bytes(dir / "ckpt.step-000000000001.safetensors");
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), sizeof header);
  EXPECT_EQ(header % 8, 0u);  // padded: the tensors start aligned
  const SafetensorsFile file = SafetensorsFile::read(dir / "ckpt.step-000000000001.safetensors");
  EXPECT_EQ(file.metadata().at("format"), "pt");
  const SafetensorsFile::Tensor& conv = file.at("conv1.weight");  // stem: 4 filters of 3x3 over 1 channel
  EXPECT_EQ(conv.dtype, "F32");
  EXPECT_EQ(conv.shape, (std::vector<std::int64_t>{4, 1, 3, 3}));
  EXPECT_EQ(file.at("layer2.0.conv1.weight").shape, (std::vector<std::int64_t>{8, 4, 3, 3}));
  EXPECT_EQ(file.at("layer2.0.downsample.0.weight").shape, (std::vector<std::int64_t>{8, 4, 1, 1}));
  EXPECT_EQ(file.at("fc.weight").shape, (std::vector<std::int64_t>{4, 16}));
  EXPECT_EQ(file.at("bn1.running_var").shape, (std::vector<std::int64_t>{4}));
  const SafetensorsFile::Tensor& tracked = file.at("bn1.num_batches_tracked");
  EXPECT_EQ(tracked.dtype, "I64");
  EXPECT_TRUE(tracked.shape.empty());
  std::int64_t steps = 0;
  std::memcpy(&steps, tracked.bytes.data(), sizeof steps);
  EXPECT_EQ(steps, 1);
  // A filter is (out, in, kh, kw) in the file: for layer2.0.conv1 (in 4), element (o, i, y, x) is at
  // ((o * 4 + i) * 3 + y) * 3 + x; reading it back through another trainer gives the same model.
  Trainer other(tiny_options(9));
  other.load_checkpoint(dir / "ckpt.json");
  const auto probe = testing::quadrant_batch(16, kShape, 7);
  EXPECT_DOUBLE_EQ(other.evaluate(probe.staged()).loss_sum, trainer.evaluate(probe.staged()).loss_sum);
  const SafetensorsFile momentum =
      SafetensorsFile::read(dir / "ckpt.step-000000000001.optimizer.safetensors");
  EXPECT_TRUE(momentum.contains("conv1.weight"));
  EXPECT_FALSE(momentum.contains("bn1.running_mean"));  // statistics have no momentum
}

TEST(Checkpoint, ANewCheckpointReplacesTheOldOnesFiles) {
  const testing::TempDir dir;
  Trainer trainer(tiny_options());
  trainer.save_checkpoint(dir / "ckpt.json", {.steps = 1});
  trainer.save_checkpoint(dir / "ckpt.json", {.steps = 2});
  EXPECT_FALSE(std::filesystem::exists(dir / "ckpt.step-000000000001.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir / "ckpt.step-000000000001.optimizer.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(dir / "ckpt.step-000000000002.safetensors"));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 3u);  // no temporaries left
  EXPECT_EQ(Trainer(tiny_options()).load_checkpoint(dir / "ckpt.json").steps, 2u);
}

// Loads `file` into a fresh trainer and returns the error's message ("" when it loaded).
std::string load_error(const std::filesystem::path& file) {
  Trainer trainer(tiny_options(3));
  const auto probe = testing::quadrant_batch(16, kShape, 7);
  const double before = trainer.evaluate(probe.staged()).loss_sum;
  try {
    trainer.load_checkpoint(file);
  } catch (const Error& error) {
    EXPECT_DOUBLE_EQ(trainer.evaluate(probe.staged()).loss_sum, before)
        << "a refused checkpoint changed the model";
    return error.what();
  }
  return "";
}

class DamagedCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    Trainer trainer(tiny_options());
    trainer.step(testing::quadrant_batch(16, kShape, 1).staged());
    trainer.save_checkpoint(json_, {.steps = 1});
  }
  const testing::TempDir dir_;
  const std::filesystem::path json_ = dir_ / "ckpt.json";
  const std::filesystem::path weights_ = dir_ / "ckpt.step-000000000001.safetensors";
  const std::filesystem::path optimizer_ = dir_ / "ckpt.step-000000000001.optimizer.safetensors";
};

TEST_F(DamagedCheckpoint, AnIntactOneLoads) { EXPECT_EQ(load_error(json_), ""); }

TEST_F(DamagedCheckpoint, AMissingCheckpointIsAnIoError) {
  EXPECT_THROW(Trainer(tiny_options()).load_checkpoint(dir_ / "nothing.json"), IoError);
}

TEST_F(DamagedCheckpoint, ATruncatedWeightsFileIsNamedAsTruncated) {
  const std::string bytes = read_bytes(weights_);
  write_bytes(weights_, bytes.substr(0, bytes.size() - 100));
  const std::string message = load_error(json_);
  EXPECT_NE(message.find(weights_.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST_F(DamagedCheckpoint, AChangedByteInTheMomentumIsAChecksumMismatch) {
  std::string bytes = read_bytes(optimizer_);
  bytes[bytes.size() - 7] ^= 0x10;
  write_bytes(optimizer_, bytes);
  const std::string message = load_error(json_);
  EXPECT_NE(message.find("optimizer file '" + optimizer_.string()), std::string::npos) << message;
  EXPECT_NE(message.find("checksum mismatch"), std::string::npos) << message;
}

TEST_F(DamagedCheckpoint, AMissingWeightsFileIsNamed) {
  std::filesystem::remove(weights_);
  try {
    Trainer(tiny_options()).load_checkpoint(json_);
    FAIL() << "expected an IoError";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find(weights_.string() + "' is missing"), std::string::npos)
        << error.what();
  }
}

TEST_F(DamagedCheckpoint, ATruncatedOrEditedJsonIsRefused) {
  const std::string text = read_bytes(json_);
  write_bytes(json_, text.substr(0, text.size() / 2));
  EXPECT_NE(load_error(json_).find("ckpt.json' is not a checkpoint (truncated"), std::string::npos);
  std::string edited = text;
  const std::size_t at = edited.find("\"steps\": 1");
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, 10, "\"steps\": 2");
  write_bytes(json_, edited);
  EXPECT_NE(load_error(json_).find("checksum mismatch"), std::string::npos);
}

TEST_F(DamagedCheckpoint, AnotherModelsCheckpointIsRefusedNamingBothModels) {
  TrainerOptions wider = tiny_options();
  wider.width = 8;
  try {
    Trainer(wider).load_checkpoint(json_);
    FAIL() << "expected an InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("holds another model"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace conveyor::train
