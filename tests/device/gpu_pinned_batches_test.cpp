// Where a pipeline's batches live on a machine with a GPU: ordinary pageable memory unless the pipeline is
// given page-locked memory (PipelineOptions::host_memory = pinned_host_memory()), which DeviceFeeder::feed
// does by itself. Each test asks CUDA what kind of memory a batch really is. Every test skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/dataset.h"
#include "src/device/cuda_check.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

constexpr ImageShape kShape{6, 8, 3};
constexpr const char* kTest = "gpu_pinned_batches_test";

#define REQUIRE_GPU() \
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason()

// `count` in-memory elements; element i's pixels are all i % 251 and its label is i.
BatchedDataset numbered_batches(std::size_t count, PipelineOptionChanges options) {
  std::vector<std::vector<std::uint8_t>> buffers(count);
  std::vector<std::int64_t> labels(count);
  for (std::size_t i = 0; i < count; ++i) {
    buffers[i] = {static_cast<std::uint8_t>(i % 251)};
    labels[i] = static_cast<std::int64_t>(i);
  }
  SampleOp fill{"fill", [](Sample& sample) {
                  const ImageView out = sample.output(kShape);
                  for (int y = 0; y < out.height; ++y)
                    std::memset(out.row(y), sample.encoded.at(0), static_cast<std::size_t>(out.width) * 3);
                  sample.publish();
                }};
  return Dataset::memory(std::move(buffers), std::move(labels)).map(fill).with_options(options).batch(4);
}

// What CUDA says of the memory at `pointer`.
cudaMemoryType memory_type(const void* pointer) {
  cudaPointerAttributes attributes{};
  CONVEYOR_CUDA(cudaPointerGetAttributes(&attributes, pointer), kTest);
  return attributes.type;
}

std::string describe(cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeUnregistered:
      return "unregistered (pageable)";
    case cudaMemoryTypeHost:
      return "host, page-locked";
    case cudaMemoryTypeDevice:
      return "device";
    case cudaMemoryTypeManaged:
      return "managed";
  }
  return "type " + std::to_string(static_cast<int>(type));
}

TEST(PinnedBatches, WithoutGivenMemoryBatchesArePageableEvenWithAGpu) {
  REQUIRE_GPU();
  testing::Watchdog watchdog(20s, "WithoutGivenMemoryBatchesArePageableEvenWithAGpu");
  BatchIterator it = numbered_batches(12, {.threads = 2}).begin();
  std::size_t batches = 0;
  while (std::optional<Batch> batch = it.next()) {
    EXPECT_FALSE(batch->pinned());
    const cudaMemoryType type = memory_type(batch->pixels().data());
    EXPECT_EQ(type, cudaMemoryTypeUnregistered) << describe(type);
    ++batches;
  }
  EXPECT_EQ(batches, 3u);
  EXPECT_FALSE(it.stats().pinned);
}

TEST(PinnedBatches, GivenPinnedMemoryEveryBatchIsPageLocked) {
  REQUIRE_GPU();
  testing::Watchdog watchdog(20s, "GivenPinnedMemoryEveryBatchIsPageLocked");
  BatchIterator it = numbered_batches(12, {.threads = 2, .host_memory = pinned_host_memory()}).begin();
  std::size_t batches = 0;
  while (std::optional<Batch> batch = it.next()) {
    EXPECT_TRUE(batch->pinned());
    for (const void* memory : {static_cast<const void*>(batch->pixels().data()),
                               static_cast<const void*>(batch->labels().data())}) {
      const cudaMemoryType type = memory_type(memory);
      EXPECT_EQ(type, cudaMemoryTypeHost) << describe(type);
    }
    for (std::size_t i = 0; i < batch->size(); ++i) {
      const std::int64_t label = batch->labels()[i];
      EXPECT_EQ(label, static_cast<std::int64_t>(batches * 4 + i));
      EXPECT_EQ(batch->image(i).data[0], static_cast<std::uint8_t>(label % 251));
    }
    ++batches;
  }
  EXPECT_EQ(batches, 3u);
  EXPECT_TRUE(it.stats().pinned);
}

TEST(PinnedBatches, FeedingADatasetToAGpuPutsItsBatchesInPageLockedMemory) {
  REQUIRE_GPU();
  testing::Watchdog watchdog(20s, "FeedingADatasetToAGpuPutsItsBatchesInPageLockedMemory");
  DeviceFeeder feeder(resolve(DeviceSpec::parse("gpu:0")), {.depth = 2});
  DeviceBatchIterator it = feeder.feed(numbered_batches(20, {.threads = 2}));
  std::vector<std::int64_t> labels;
  while (std::optional<DeviceBatch> batch = it.next()) {
    EXPECT_TRUE(batch->on_device());
    std::vector<std::int64_t> host(batch->size());
    feeder.synchronize();
    CONVEYOR_CUDA(cudaMemcpy(host.data(), batch->labels().data, host.size() * sizeof(std::int64_t),
                             cudaMemcpyDeviceToHost),
                  kTest);
    labels.insert(labels.end(), host.begin(), host.end());
  }
  feeder.synchronize();
  std::vector<std::int64_t> expected(20);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<std::int64_t>(i);
  EXPECT_EQ(labels, expected);
  EXPECT_TRUE(it.stats().pinned) << "feed() must give the pipeline page-locked memory";
  const FeederStats stats = feeder.stats();
  EXPECT_EQ(stats.batches, 5u);
  EXPECT_EQ(stats.pageable, 0u) << "batches went through the driver's bounce buffer";
}

}  // namespace
}  // namespace conveyor
