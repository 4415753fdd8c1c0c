// One process driving two GPUs, each replica fed by its own feeder that decodes part of every batch with
// nvJPEG beside the step: the configuration that hung in 3 of 12 runs on 2026-11-27 (feed_vs_prefetch
// --gpus 2; shared/evidence/two-gpu-one-process-hang.txt). Run after run, each under a watchdog and a
// ProgressWatch whose report (what every thread waits for) becomes the failure message, so a hang fails
// the test with the cycle named instead of stalling the suite. CONVEYOR_HANG_RUNS and CONVEYOR_HANG_STEPS
// set how many runs and steps (default 5 x 40; bench/gpu/multi_gpu_hangs.sh asks for 10). Skipped
// with fewer than two GPUs or without nvJPEG.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/progress_watch.h"
#include "conveyor/train/data_parallel.h"
#include "src/device/nvjpeg/nvjpeg_library.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor::train {
namespace {

using namespace std::chrono_literals;

constexpr ImageShape kShape{64, 64, 3};
constexpr int kBatch = 32;

int visible_gpus() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

int from_environment(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && std::atoi(value) > 0 ? std::atoi(value) : fallback;
}

// Photo-sized JPEGs (375 x 500, 4:2:0: what nvJPEG's hardware engines take) and their labels.
struct Photos {
  std::vector<std::vector<std::uint8_t>> jpegs;
  std::vector<std::int64_t> labels;
};
Photos photos(int count) {
  Photos out;
  for (int i = 0; i < count; ++i) {
    out.jpegs.push_back(testing::make_jpeg(375, 500, 3, 4000 + static_cast<std::uint64_t>(i)));
    out.labels.push_back(i % 4);
  }
  return out;
}

TrainerOptions small_model() {
  TrainerOptions o;
  o.model = ModelKind::small_resnet;
  o.num_classes = 4;
  o.input = kShape;
  o.batch = kBatch;
  o.width = 16;
  o.blocks_per_stage = 1;
  o.precision = Precision::bf16;
  o.cuda_graph = false;  // kernel by kernel, as feed_vs_prefetch runs a step beside nvJPEG
  o.seed = 5;
  return o;
}

// One run: a data-parallel trainer on GPUs 0 and 1, a hybrid-decoding feeder per GPU, `steps` steps.
// Returns the stall reports (empty when the run kept making progress).
std::string one_run(const Photos& data, int steps, const std::string& memory_folder) {
  std::mutex mutex;
  std::string reports;
  auto watch = std::make_shared<ProgressWatch>(
      ProgressWatch::Options{.limit = 30s, .on_stall = [&](const std::string& text) {
                               std::cerr << text;
                               std::lock_guard lock(mutex);
                               reports += text;
                             }});
  const ProgressWatch::Member me(watch, "test's training loop");
  DataParallelTrainer trainer(small_model(), std::vector<int>{0, 1}, {.progress_watch = watch});
  trainer.warmup();
  watch->progress();  // the stall clock counts from here
  std::vector<std::unique_ptr<DeviceFeeder>> feeders;
  std::vector<BatchedDataset> datasets;
  for (std::size_t i = 0; i < 2; ++i) {
    FeederOptions options;
    options.normalize = trainer.replica(i).input_normalization();
    options.augment.flip_horizontal = 0.5;
    options.decode.enabled = true;
    options.decode.share = 0.6;  // adapting from there (the pipelines are not deterministic)
    options.decode.memory_folder = memory_folder;
    options.progress_watch = watch;
    feeders.push_back(
        std::make_unique<DeviceFeeder>(resolve(DeviceSpec::parse("gpu:" + std::to_string(i))), options));
    datasets.push_back(Dataset::memory(data.jpegs, data.labels)
                           .repeat()
                           .shard(2, i)
                           .map(ops::decode_random_resized_crop(kShape.width))
                           .with_options({.threads = 4, .deterministic = false, .seed = 11})
                           .batch(kBatch, kShape));
    feeders.back()->warmup(datasets.back());
  }
  watch->progress();
  std::vector<DeviceBatchIterator> iterators;
  for (std::size_t i = 0; i < 2; ++i) iterators.push_back(feeders[i]->feed(datasets[i]));
  std::vector<DeviceBatch> staged;
  for (int step = 0; step < steps; ++step) {
    staged.clear();
    for (DeviceBatchIterator& it : iterators) {
      std::optional<DeviceBatch> batch = it.next();
      if (!batch) throw Error("the pipeline ended early");
      staged.push_back(std::move(*batch));
    }
    trainer.step(staged);
    watch->progress();
  }
  staged.clear();
  trainer.synchronize();
  std::lock_guard lock(mutex);
  return reports;
}

TEST(DataParallelTwoGpusBesideNvjpeg, RunAfterRunTrainsWithoutAHang) {
  if (visible_gpus() < 2) GTEST_SKIP() << "2 CUDA devices needed, " << visible_gpus() << " visible";
  if (const nvjpeg::LoadResult loaded = nvjpeg::load(); !loaded) GTEST_SKIP() << loaded.unavailable;
  const int runs = from_environment("CONVEYOR_HANG_RUNS", 5);
  const int steps = from_environment("CONVEYOR_HANG_STEPS", 40);
  const Photos data = photos(128);
  const testing::TempDir memory;  // the split's memory: not the user's cache
  for (int run = 0; run < runs; ++run) {
    const testing::Watchdog watchdog(std::chrono::seconds(120 + steps),
                                     "two GPUs in one process beside nvJPEG, run " + std::to_string(run));
    const auto start = std::chrono::steady_clock::now();
    const std::string reports = one_run(data, steps, memory.path().string());
    EXPECT_EQ(reports, "") << "run " << run << " stopped making progress";
    std::cout << "[ hang     ] run " << run + 1 << " of " << runs << ": " << steps << " steps in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
  }
}

}  // namespace
}  // namespace conveyor::train
