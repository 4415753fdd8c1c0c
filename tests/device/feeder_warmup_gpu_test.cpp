// DeviceFeeder::warmup and what a run keeps for the next (issue 36, "start at speed", and "never hang"):
// after warm-up the first batches make no ring buffer and no page-locked batch buffer, nvJPEG has decoded on
// every path it has, and an adapting split settles into a file the next run starts from. Lines starting
// "[ warmup   ]" say what happened. Skips without a GPU; the decode tests also without nvJPEG.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "src/device/nvjpeg/nvjpeg_library.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

constexpr int kSize = 64;
constexpr ImageShape kShape{kSize, kSize, 3};

#define REQUIRE_GPU() \
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason()

#define REQUIRE_NVJPEG() \
  if (const nvjpeg::LoadResult loaded = nvjpeg::load(); !loaded) GTEST_SKIP() << loaded.unavailable

std::vector<std::vector<std::uint8_t>> photos(int count) {
  std::vector<std::vector<std::uint8_t>> out;
  for (int i = 0; i < count; ++i)
    out.push_back(
        testing::make_jpeg(i % 2 ? 187 : 250, i % 2 ? 250 : 166, 3, 900 + static_cast<std::uint64_t>(i)));
  return out;
}

FeederOptions hybrid(const std::string& memory_folder) {
  FeederOptions options;
  options.normalize = ops::NormalizeParams{};
  options.normalize->type = ops::ElementType::bfloat16;
  options.normalize->layout = ops::TensorLayout::hwc;
  options.augment.flip_horizontal = 0.5;
  options.decode.enabled = true;
  options.decode.share = 0.5;
  options.decode.memory_folder = memory_folder;
  options.decode.memory_key = "feeder_warmup_gpu_test";
  return options;
}

BatchedDataset batches(int images, int repeat, bool deterministic) {
  return Dataset::memory(photos(images))
      .repeat(static_cast<std::uint64_t>(repeat))
      .map(ops::decode_random_resized_crop(kSize))
      .with_options({.threads = 3, .deterministic = deterministic, .seed = 3})
      .batch(16, kShape);
}

// Runs every batch of `dataset` through `feeder`; returns the batches seen.
std::size_t drain(DeviceFeeder& feeder, const BatchedDataset& dataset) {
  std::size_t seen = 0;
  for (DeviceBatch& batch : feeder.feed(dataset)) {
    static_cast<void>(batch);
    ++seen;
  }
  feeder.synchronize();
  return seen;
}

TEST(FeederWarmup, AfterWarmUpTheBatchesMakeNoRingBufferAndNoPageLockedBuffer) {
  REQUIRE_GPU();
  const testing::Watchdog watchdog(180s, "AfterWarmUpTheBatchesMakeNoRingBufferAndNoPageLockedBuffer");
  const testing::TempDir dir;
  FeederOptions options = hybrid(dir.path().string());
  options.decode.enabled = false;  // the ring and the batch buffers only: no nvJPEG needed
  DeviceFeeder feeder(resolve(DeviceSpec::parse("gpu:0")), options);
  const BatchedDataset dataset = batches(32, 4, true);
  const double seconds = feeder.warmup(dataset);
  const FeederStats warm = feeder.stats();
  std::cout << "[ warmup   ] " << seconds << " s; ring buffers " << warm.allocations
            << ", page-locked blocks " << warm.host_blocks << "\n";
  EXPECT_EQ(warm.allocations, static_cast<std::uint64_t>(options.depth)) << "one buffer per ring slot";
  EXPECT_GT(warm.host_blocks, 0u);
  EXPECT_EQ(drain(feeder, dataset), 8u);
  const FeederStats after = feeder.stats();
  EXPECT_EQ(after.allocations, warm.allocations) << "a ring buffer was made while batches ran";
  EXPECT_EQ(after.host_blocks, warm.host_blocks) << "a page-locked batch buffer was made while batches ran";
  // A second run of the same feeder takes the same blocks again.
  EXPECT_EQ(drain(feeder, dataset), 8u);
  EXPECT_EQ(feeder.stats().host_blocks, warm.host_blocks);
}

TEST(FeederWarmup, NvjpegDecodesOnEveryPathItHasBeforeTheFirstBatch) {
  REQUIRE_GPU();
  REQUIRE_NVJPEG();
  const testing::Watchdog watchdog(180s, "NvjpegDecodesOnEveryPathItHasBeforeTheFirstBatch");
  const testing::TempDir dir;
  DeviceFeeder feeder(resolve(DeviceSpec::parse("gpu:0")), hybrid(dir.path().string()));
  const BatchedDataset dataset = batches(32, 2, true);
  feeder.warmup(dataset);
  const FeederStats stats = feeder.stats();
  std::cout << "[ warmup   ] " << stats.warmup << "\n[ warmup   ] " << stats.decoder << "\n";
  ASSERT_NE(stats.warmup.find("warm-up: 2 decoders x 16"), std::string::npos) << stats.warmup;
  // The synthetic batch holds a picture for each path; which paths exist depends on the GPU.
  const bool engines = stats.decoder.find("hardware decoder (") != std::string::npos;
  if (engines) {
    EXPECT_NE(stats.warmup.find("hardware_roi"), std::string::npos) << stats.warmup;
    EXPECT_NE(stats.decoder.find("one batch at a time"), std::string::npos) << stats.decoder;
    EXPECT_EQ(stats.decoder.find("no pool"), std::string::npos)
        << "this nvJPEG cannot keep a pool: " << stats.decoder;
  }
  // The forms the engines refuse went through nvJPEG's software path, or were refused by it too (then the
  // CPU decodes such images in a run, and no GPU kernel of that path needs loading).
  EXPECT_TRUE(stats.warmup.find("software") != std::string::npos ||
              stats.warmup.find("fallback") != std::string::npos)
      << stats.warmup;
  EXPECT_EQ(drain(feeder, dataset), 4u);
  EXPECT_EQ(feeder.stats().decode_failures, 0u);
}

TEST(FeederWarmup, TheSplitARunSettlesAtIsWhereTheNextRunStarts) {
  REQUIRE_GPU();
  REQUIRE_NVJPEG();
  const testing::Watchdog watchdog(300s, "TheSplitARunSettlesAtIsWhereTheNextRunStarts");
  const testing::TempDir dir;
  const BatchedDataset dataset = batches(64, 6, /*deterministic=*/false);  // 24 batches: enough to keep
  std::string first_note;
  {
    DeviceFeeder feeder(resolve(DeviceSpec::parse("gpu:0")), hybrid(dir.path().string()));
    feeder.warmup(dataset);
    EXPECT_EQ(drain(feeder, dataset), 24u);
    first_note = feeder.stats().split_memory;
  }  // the feeder keeps what its split settled at when it goes
  EXPECT_EQ(first_note, "no remembered split");
  // Each later run warms up first too: started at once, a run this short can end before its split opens,
  // and only an open split recalls what an earlier run settled at.
  DeviceFeeder again(resolve(DeviceSpec::parse("gpu:0")), hybrid(dir.path().string()));
  again.warmup(dataset);
  EXPECT_EQ(drain(again, dataset), 24u);
  const std::string note = again.stats().split_memory;
  std::cout << "[ warmup   ] second run: " << note << "\n";
  EXPECT_NE(note.find("started from the remembered share"), std::string::npos) << note;
  // Another key is another balance: nothing to start from.
  FeederOptions other = hybrid(dir.path().string());
  other.decode.memory_key = "another step beside the decoder";
  DeviceFeeder third(resolve(DeviceSpec::parse("gpu:0")), other);
  third.warmup(batches(64, 1, false));
  EXPECT_EQ(drain(third, batches(64, 1, false)), 4u);
  EXPECT_EQ(third.stats().split_memory, "no remembered split");
}

}  // namespace
}  // namespace conveyor
