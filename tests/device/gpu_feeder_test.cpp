// DeviceFeeder on a GPU: exact copies, pinned buffers back as soon as their copy ends, ring slots reused
// only after the step's `consumed` event, memory limits named. Every test skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/device_feeder.h"
#include "conveyor/error.h"
#include "src/device/cuda_check.h"
#include "src/device/cuda_handles.h"
#include "src/device/device_memory.h"
#include "support/watchdog.h"
#include "test_batches.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using testing::HostMemory;
using testing::RecordingBatchPool;

constexpr ImageShape kShape{8, 12, 3};
constexpr const char* kTest = "gpu_feeder_test";

std::optional<Placement> first_gpu() {
  if (list_gpus().empty()) return std::nullopt;
  return resolve(DeviceSpec::parse("gpu:0"));
}

// Declares `placement` (a name, so it cannot be parenthesised) and skips the test without a GPU.
#define REQUIRE_GPU(placement)                             \
  const std::optional<Placement> placement = first_gpu();  \
  if (!placement) /* NOLINT(bugprone-macro-parentheses) */ \
  GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason()

std::vector<std::uint8_t> download_pixels(const StagedBatch& staged) {
  std::vector<std::uint8_t> host(staged.size * staged.shape.bytes());
  CONVEYOR_CUDA(cudaEventSynchronize(static_cast<cudaEvent_t>(staged.ready)), kTest);
  CONVEYOR_CUDA(cudaMemcpy(host.data(), staged.pixels, host.size(), cudaMemcpyDeviceToHost), kTest);
  return host;
}

std::vector<std::int64_t> download_labels(const StagedBatch& staged) {
  std::vector<std::int64_t> host(staged.size);
  CONVEYOR_CUDA(cudaEventSynchronize(static_cast<cudaEvent_t>(staged.ready)), kTest);
  CONVEYOR_CUDA(
      cudaMemcpy(host.data(), staged.labels, host.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost),
      kTest);
  return host;
}

TEST(GpuFeeder, CopiesPixelsAndLabelsExactly) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "CopiesPixelsAndLabelsExactly");
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, 3);
  for (int id = 0; id < 7; ++id) {
    const StagedBatch staged = feeder.stage(pool.make(id, 16 - static_cast<std::size_t>(id)));
    EXPECT_TRUE(staged.on_device);
    EXPECT_EQ(staged.device, gpu->device);
    EXPECT_EQ(staged.shape, kShape);
    EXPECT_EQ(staged.size, 16u - static_cast<std::size_t>(id));
    EXPECT_EQ(download_pixels(staged), RecordingBatchPool::expected_pixels(id, staged.size, kShape)) << id;
    EXPECT_EQ(download_labels(staged), RecordingBatchPool::expected_labels(id, staged.size)) << id;
    // Done reading: let the feeder reuse this slot.
    CONVEYOR_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(staged.consumed), nullptr), kTest);
  }
  feeder.synchronize();
  const FeederStats stats = feeder.stats();
  EXPECT_EQ(stats.batches, 7u);
  EXPECT_EQ(stats.copies, 7u);
  EXPECT_EQ(stats.pageable, 0u);
  EXPECT_EQ(stats.allocations, 3u);  // one buffer per ring slot, sized at the first batch
  std::uint64_t bytes = 0;
  for (int id = 0; id < 7; ++id) bytes += (16u - id) * (kShape.bytes() + sizeof(std::int64_t));
  EXPECT_EQ(stats.bytes, bytes);
  EXPECT_GT(stats.copy_seconds, 0.0);
}

TEST(GpuFeeder, GivesThePinnedBatchBackWhenItsCopyEnds) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "GivesThePinnedBatchBackWhenItsCopyEnds");
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, 3);
  const StagedBatch staged = feeder.stage(pool.make(1));
  // No further stage(), no synchronize(), no consumed event: the copy ending alone brings it back.
  EXPECT_TRUE(pool.wait_returned(1, 10s));
  EXPECT_EQ(cudaEventQuery(static_cast<cudaEvent_t>(staged.ready)), cudaSuccess);
  EXPECT_EQ(download_pixels(staged), RecordingBatchPool::expected_pixels(1, 16, kShape));
}

TEST(GpuFeeder, SynchronizeWaitsForEveryCopyAndEveryReturn) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "SynchronizeWaitsForEveryCopyAndEveryReturn");
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, 2);
  const StagedBatch a = feeder.stage(pool.make(1));
  const StagedBatch b = feeder.stage(pool.make(2));
  feeder.synchronize();
  EXPECT_TRUE(pool.returned(1));
  EXPECT_TRUE(pool.returned(2));
  EXPECT_EQ(cudaEventQuery(static_cast<cudaEvent_t>(a.ready)), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(static_cast<cudaEvent_t>(b.ready)), cudaSuccess);
}

// Blocks a CUDA stream from the host until the test opens it: stands for a long training step.
struct Gate {
  std::mutex mutex;
  std::condition_variable opened_cv;
  bool opened = false;
  void open() {
    {
      std::lock_guard lock(mutex);
      opened = true;
    }
    opened_cv.notify_all();
  }
  static void CUDART_CB wait(void* self) {  // runs on CUDA's callback thread; calls no CUDA
    auto& gate = *static_cast<Gate*>(self);
    std::unique_lock lock(gate.mutex);
    gate.opened_cv.wait(lock, [&] { return gate.opened; });
  }
};

TEST(GpuFeeder, ReusesARingSlotOnlyAfterTheStepRecordedConsumed) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(30s, "ReusesARingSlotOnlyAfterTheStepRecordedConsumed");
  cuda::DeviceGuard device(gpu->device);
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, 2);
  cuda::Stream compute;
  const std::size_t bytes = 16 * kShape.bytes();
  std::uint8_t* seen = nullptr;  // what the "step" read from slot 0
  CONVEYOR_CUDA(cudaMalloc(&seen, bytes), kTest);
  Gate gate;

  // Step on batch 0 (slot 0): wait for its copy, stall on the gate, then read the slot, then `consumed`.
  const StagedBatch first = feeder.stage(pool.make(100));
  CONVEYOR_CUDA(cudaStreamWaitEvent(compute.get(), static_cast<cudaEvent_t>(first.ready), 0), kTest);
  CONVEYOR_CUDA(cudaLaunchHostFunc(compute.get(), &Gate::wait, &gate), kTest);
  CONVEYOR_CUDA(cudaMemcpyAsync(seen, first.pixels, bytes, cudaMemcpyDeviceToDevice, compute.get()), kTest);
  CONVEYOR_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(first.consumed), compute.get()), kTest);
  // Batch 1 goes to slot 1 and is consumed at once (behind the stalled step on the same stream).
  const StagedBatch second = feeder.stage(pool.make(101));
  CONVEYOR_CUDA(cudaStreamWaitEvent(compute.get(), static_cast<cudaEvent_t>(second.ready), 0), kTest);
  CONVEYOR_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(second.consumed), compute.get()), kTest);
  // Batch 2 comes back to slot 0 while the step still has to read it: its copy must wait.
  const StagedBatch third = feeder.stage(pool.make(102));
  EXPECT_EQ(third.pixels, first.pixels) << "a ring of 2 must reuse slot 0 for the third batch";
  EXPECT_EQ(cudaEventQuery(static_cast<cudaEvent_t>(third.ready)), cudaErrorNotReady)
      << "the copy into slot 0 ran while the step had not consumed it";

  gate.open();
  CONVEYOR_CUDA(cudaStreamSynchronize(compute.get()), kTest);
  feeder.synchronize();
  std::vector<std::uint8_t> read(bytes);
  CONVEYOR_CUDA(cudaMemcpy(read.data(), seen, bytes, cudaMemcpyDeviceToHost), kTest);
  EXPECT_EQ(read, RecordingBatchPool::expected_pixels(100, 16, kShape)) << "the step read overwritten data";
  EXPECT_EQ(download_pixels(third), RecordingBatchPool::expected_pixels(102, 16, kShape));
  CONVEYOR_CUDA(cudaFree(seen), kTest);
}

TEST(GpuFeeder, APageableBatchIsCopiedAndCounted) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "APageableBatchIsCopiedAndCounted");
  RecordingBatchPool pool(kShape, 16, HostMemory::pageable);
  DeviceFeeder feeder(*gpu, 2);
  const StagedBatch staged = feeder.stage(pool.make(5));
  EXPECT_EQ(download_pixels(staged), RecordingBatchPool::expected_pixels(5, 16, kShape));
  EXPECT_EQ(download_labels(staged), RecordingBatchPool::expected_labels(5, 16));
  feeder.synchronize();
  EXPECT_TRUE(pool.returned(5));
  EXPECT_EQ(feeder.stats().pageable, 1u);
}

TEST(GpuFeeder, ALargerBatchGrowsTheRingBuffers) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "ALargerBatchGrowsTheRingBuffers");
  RecordingBatchPool small(kShape, 4, HostMemory::pinned);
  RecordingBatchPool large(kShape, 64, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, 2);
  for (int id = 0; id < 2; ++id) {
    const StagedBatch staged = feeder.stage(small.make(id));
    CONVEYOR_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(staged.consumed), nullptr), kTest);
  }
  EXPECT_EQ(feeder.stats().allocations, 2u);
  const StagedBatch staged = feeder.stage(large.make(9));
  EXPECT_EQ(download_pixels(staged), RecordingBatchPool::expected_pixels(9, 64, kShape));
  EXPECT_EQ(feeder.stats().allocations, 3u);
}

TEST(GpuFeeder, AMemoryLimitGivesDeviceMemoryErrorNamingTheRingBuffer) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "AMemoryLimitGivesDeviceMemoryErrorNamingTheRingBuffer");
  cuda::DeviceMemoryPool memory(gpu->device, std::size_t{64} * 1024);
  RecordingBatchPool pool({224, 224, 3}, 4, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, memory, 2);
  try {
    feeder.stage(pool.make(1));
    FAIL() << "a 600 KB ring buffer fitted under a 64 KiB limit";
  } catch (const DeviceMemoryError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("DeviceFeeder ring slot 0"), std::string::npos) << message;
    EXPECT_NE(message.find("4 x 224x224x3 uint8"), std::string::npos) << message;
    EXPECT_GT(error.requested(), 64u * 1024u);
  }
  EXPECT_TRUE(pool.returned(1)) << "the batch that could not be staged must go back to its pool";
}

TEST(GpuFeeder, AMemoryPoolOfAnotherDeviceIsRefused) {
  REQUIRE_GPU(gpu);
  if (list_gpus().size() < 2) GTEST_SKIP() << "needs two GPUs";
  cuda::DeviceMemoryPool other(1);
  EXPECT_THROW(DeviceFeeder(*gpu, other, 2), InvalidArgument);
}

TEST(GpuFeeder, DestroyingTheFeederWaitsForCopiesAndGivesEveryBatchBack) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "DestroyingTheFeederWaitsForCopiesAndGivesEveryBatchBack");
  RecordingBatchPool pool({224, 224, 3}, 32, HostMemory::pinned);
  {
    DeviceFeeder feeder(*gpu, 3);
    for (int id = 0; id < 3; ++id) feeder.stage(pool.make(id));
  }
  EXPECT_EQ(pool.returned_ids().size(), 3u);
}

}  // namespace
}  // namespace conveyor
