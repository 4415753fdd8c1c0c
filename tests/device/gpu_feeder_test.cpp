// DeviceFeeder on a GPU: exact copies, pinned buffers back as soon as their copy ends, a ring slot reused
// only after its consumer stream (and every stream that read it) passed the batch's release, holding more
// batches than the ring has refused, normalized images, memory limits named. Every test skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/dlpack.h"
#include "conveyor/cuda/stream.h"
#include "conveyor/error.h"
#include "conveyor/ops/normalize.h"
#include "slow_reader.h"
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

// Reads a held batch back on its consumer stream (so after its copy), synchronously.
template <class T>
std::vector<T> download(const DeviceFeeder& feeder, const TensorView& view) {
  std::vector<T> host(view.elements());
  const cudaStream_t stream = cuda::consumer_stream(feeder);
  CONVEYOR_CUDA(cudaMemcpyAsync(host.data(), view.data, view.bytes(), cudaMemcpyDeviceToHost, stream), kTest);
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), kTest);
  return host;
}

std::vector<std::uint8_t> download_pixels(const DeviceFeeder& feeder, const DeviceBatch& batch) {
  return download<std::uint8_t>(feeder, batch.pixels());
}
std::vector<std::int64_t> download_labels(const DeviceFeeder& feeder, const DeviceBatch& batch) {
  return download<std::int64_t>(feeder, batch.labels());
}

TEST(GpuFeeder, CopiesPixelsAndLabelsExactly) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "CopiesPixelsAndLabelsExactly");
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, {.depth = 3});
  for (int id = 0; id < 7; ++id) {
    const DeviceBatch staged = feeder.stage(pool.make(id, 16 - static_cast<std::size_t>(id)));
    EXPECT_TRUE(staged.on_device());
    EXPECT_EQ(staged.device(), gpu->device);
    EXPECT_EQ(staged.pixels().device, gpu->device);
    EXPECT_EQ(staged.sample_shape(), kShape);
    EXPECT_EQ(staged.size(), 16u - static_cast<std::size_t>(id));
    EXPECT_EQ(download_pixels(feeder, staged), RecordingBatchPool::expected_pixels(id, staged.size(), kShape))
        << id;
    EXPECT_EQ(download_labels(feeder, staged), RecordingBatchPool::expected_labels(id, staged.size())) << id;
  }  // each batch released at the end of its iteration
  feeder.synchronize();
  const FeederStats stats = feeder.stats();
  EXPECT_EQ(stats.batches, 7u);
  EXPECT_EQ(stats.copies, 7u);
  EXPECT_EQ(stats.pageable, 0u);
  EXPECT_EQ(stats.held, 0u);
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
  DeviceFeeder feeder(*gpu, {.depth = 3});
  const DeviceBatch staged = feeder.stage(pool.make(1));
  // No further stage(), no synchronize(), no release: the copy ending alone brings the pinned batch back.
  EXPECT_TRUE(pool.wait_returned(1, 10s));
  EXPECT_EQ(download_pixels(feeder, staged), RecordingBatchPool::expected_pixels(1, 16, kShape));
}

TEST(GpuFeeder, SynchronizeWaitsForEveryCopyAndEveryReturn) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "SynchronizeWaitsForEveryCopyAndEveryReturn");
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, {.depth = 2});
  const DeviceBatch a = feeder.stage(pool.make(1));
  const DeviceBatch b = feeder.stage(pool.make(2));
  feeder.synchronize();
  EXPECT_TRUE(pool.returned(1));
  EXPECT_TRUE(pool.returned(2));
  EXPECT_EQ(feeder.stats().copies, 2u);
}

// The test: a deliberately slow kernel reads a batch while the feeder races ahead and reuses the
// batch's slot as soon as it may. The kernel must see exactly that batch's bytes.
void expect_slow_reader_sees_its_batch(const Placement& gpu, bool on_another_stream) {
  cuda::DeviceGuard device(gpu.device);
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  DeviceFeeder feeder(gpu, {.depth = 2});
  cuda::Stream other;
  std::uint64_t* sums = nullptr;
  CONVEYOR_CUDA(cudaMalloc(&sums, 8 * sizeof(std::uint64_t)), kTest);
  CONVEYOR_CUDA(cudaMemset(sums, 0, 8 * sizeof(std::uint64_t)), kTest);
  for (int id = 0; id < 8; ++id) {
    DeviceBatch batch = feeder.stage(pool.make(id));
    cudaStream_t reader = cuda::consumer_stream(feeder);
    if (on_another_stream) {
      reader = other.get();
      cuda::read_on(batch, reader);
    }
    // Batch 0 is read slowly (about 50 ms of spinning first); the others at once.
    testing::launch_slow_checksum(batch.pixels().as<const std::uint8_t>(), batch.pixels().bytes(), sums + id,
                                  id == 0 ? 50'000'000 : 0, reader);
    // Released right away: the feeder may reuse the slot only once `reader` has passed this point.
  }
  CONVEYOR_CUDA(cudaDeviceSynchronize(), kTest);
  std::vector<std::uint64_t> got(8);
  CONVEYOR_CUDA(cudaMemcpy(got.data(), sums, got.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost),
                kTest);
  for (int id = 0; id < 8; ++id) {
    const auto expected = RecordingBatchPool::expected_pixels(id, 16, kShape);
    EXPECT_EQ(got[static_cast<std::size_t>(id)], testing::checksum(expected.data(), expected.size()))
        << "the reader of batch " << id << " saw other bytes: its slot was overwritten while it read";
  }
  CONVEYOR_CUDA(cudaFree(sums), kTest);
}

TEST(GpuFeeder, ASlowKernelOnTheConsumerStreamReadsItsOwnBatch) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(30s, "ASlowKernelOnTheConsumerStreamReadsItsOwnBatch");
  expect_slow_reader_sees_its_batch(*gpu, false);
}

TEST(GpuFeeder, ASlowKernelOnAnotherStreamReadsItsOwnBatch) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(30s, "ASlowKernelOnAnotherStreamReadsItsOwnBatch");
  expect_slow_reader_sees_its_batch(*gpu, true);
}

TEST(GpuFeeder, HoldingMoreBatchesThanTheRingIsAnError) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "HoldingMoreBatchesThanTheRingIsAnError");
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, {.depth = 2});
  DeviceBatch a = feeder.stage(pool.make(1));
  DeviceBatch b = feeder.stage(pool.make(2));
  try {
    feeder.stage(pool.make(3));
    FAIL() << "a third batch was staged while both slots were held";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("never overwrites"), std::string::npos) << error.what();
  }
  EXPECT_EQ(download_pixels(feeder, a), RecordingBatchPool::expected_pixels(1, 16, kShape));
  EXPECT_EQ(download_pixels(feeder, b), RecordingBatchPool::expected_pixels(2, 16, kShape));
  EXPECT_TRUE(pool.wait_returned(3, 10s)) << "the refused batch must go back to its pool";
  // A DLPack view holds its batch like the handle does.
  DLManagedTensor* view = to_dlpack_pixels(a);
  a.release();
  EXPECT_THROW(feeder.stage(pool.make(4)), Error);
  view->deleter(view);
  EXPECT_NO_THROW(feeder.stage(pool.make(5)));
}

TEST(GpuFeeder, ExportsDeviceBatchesAsDlpackTensors) {
  REQUIRE_GPU(gpu);
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  ops::NormalizeParams params;
  params.type = ops::ElementType::bfloat16;
  params.layout = ops::TensorLayout::chw;
  DeviceFeeder feeder(*gpu, {.depth = 2, .normalize = params});
  const DeviceBatch batch = feeder.stage(pool.make(1, 10));
  DLManagedTensor* pixels = to_dlpack_pixels(batch);
  DLManagedTensor* labels = to_dlpack_labels(batch);
  DLManagedTensor* images = to_dlpack_images(batch);
  EXPECT_EQ(pixels->dl_tensor.data, batch.pixels().data);
  EXPECT_EQ(pixels->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(pixels->dl_tensor.device.device_id, gpu->device);
  EXPECT_EQ(pixels->dl_tensor.ndim, 4);
  EXPECT_EQ(pixels->dl_tensor.shape[0], 10);
  EXPECT_EQ(pixels->dl_tensor.shape[3], 3);
  EXPECT_EQ(pixels->dl_tensor.strides[0], kShape.bytes());
  EXPECT_EQ(pixels->dl_tensor.dtype.code, kDLUInt);
  EXPECT_EQ(labels->dl_tensor.data, batch.labels().data);
  EXPECT_EQ(labels->dl_tensor.dtype.code, kDLInt);
  EXPECT_EQ(labels->dl_tensor.dtype.bits, 64);
  EXPECT_EQ(images->dl_tensor.data, batch.images().data);
  EXPECT_EQ(images->dl_tensor.dtype.code, kDLBfloat);
  EXPECT_EQ(images->dl_tensor.shape[1], 3);  // NCHW
  EXPECT_EQ(images->dl_tensor.strides[1], static_cast<std::int64_t>(kShape.height * kShape.width));
  for (DLManagedTensor* t : {pixels, labels, images}) t->deleter(t);
}

TEST(GpuFeeder, ABatchHeldPastTheFeederStaysValid) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "ABatchHeldPastTheFeederStaysValid");
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  DeviceBatch kept;
  {
    DeviceFeeder feeder(*gpu, {.depth = 2});
    kept = feeder.stage(pool.make(3));
    feeder.stage(pool.make(4));
  }
  EXPECT_TRUE(pool.returned(3) && pool.returned(4)) << "the feeder's end gives every pinned batch back";
  CONVEYOR_CUDA(cudaDeviceSynchronize(), kTest);
  std::vector<std::uint8_t> host(kept.pixels().bytes());
  CONVEYOR_CUDA(cudaMemcpy(host.data(), kept.pixels().data, host.size(), cudaMemcpyDeviceToHost), kTest);
  EXPECT_EQ(host, RecordingBatchPool::expected_pixels(3, 16, kShape));
  kept.release();
}

TEST(GpuFeeder, NormalizesOnTheDeviceAsTheCpuDoes) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "NormalizesOnTheDeviceAsTheCpuDoes");
  RecordingBatchPool pool(kShape, 16, HostMemory::pinned);
  for (const auto layout : {ops::TensorLayout::chw, ops::TensorLayout::hwc}) {
    ops::NormalizeParams params;
    params.mean = {123.f, 116.f, 103.f, 0.f};
    params.std = {58.f, 57.f, 57.5f, 1.f};
    params.layout = layout;
    DeviceFeeder feeder(*gpu, {.depth = 2, .normalize = params});
    const DeviceBatch batch = feeder.stage(pool.make(7));
    std::vector<float> expected(16 * kShape.bytes());
    const auto host_pixels = RecordingBatchPool::expected_pixels(7, 16, kShape);
    ops::normalize_batch(host_pixels.data(), 16, kShape, params, expected.data());
    EXPECT_EQ(download<float>(feeder, batch.images()), expected);
  }
}

TEST(GpuFeeder, APageableBatchIsCopiedAndCounted) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "APageableBatchIsCopiedAndCounted");
  RecordingBatchPool pool(kShape, 16, HostMemory::pageable);
  DeviceFeeder feeder(*gpu, {.depth = 2});
  const DeviceBatch staged = feeder.stage(pool.make(5));
  EXPECT_EQ(download_pixels(feeder, staged), RecordingBatchPool::expected_pixels(5, 16, kShape));
  EXPECT_EQ(download_labels(feeder, staged), RecordingBatchPool::expected_labels(5, 16));
  feeder.synchronize();
  EXPECT_TRUE(pool.returned(5));
  EXPECT_EQ(feeder.stats().pageable, 1u);
}

TEST(GpuFeeder, ALargerBatchGrowsTheRingBuffers) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "ALargerBatchGrowsTheRingBuffers");
  RecordingBatchPool small(kShape, 4, HostMemory::pinned);
  RecordingBatchPool large(kShape, 64, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, {.depth = 2});
  for (int id = 0; id < 2; ++id) feeder.stage(small.make(id));
  EXPECT_EQ(feeder.stats().allocations, 2u);
  const DeviceBatch staged = feeder.stage(large.make(9));
  EXPECT_EQ(download_pixels(feeder, staged), RecordingBatchPool::expected_pixels(9, 64, kShape));
  EXPECT_EQ(feeder.stats().allocations, 3u);
}

TEST(GpuFeeder, AMemoryLimitGivesDeviceMemoryErrorNamingTheRingBuffer) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "AMemoryLimitGivesDeviceMemoryErrorNamingTheRingBuffer");
  cuda::DeviceMemoryPool memory(gpu->device, std::size_t{64} * 1024);
  RecordingBatchPool pool({224, 224, 3}, 4, HostMemory::pinned);
  DeviceFeeder feeder(*gpu, memory, {.depth = 2});
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
  EXPECT_THROW(DeviceFeeder(*gpu, other, {.depth = 2}), InvalidArgument);
}

TEST(GpuFeeder, DestroyingTheFeederWaitsForCopiesAndGivesEveryBatchBack) {
  REQUIRE_GPU(gpu);
  testing::Watchdog watchdog(20s, "DestroyingTheFeederWaitsForCopiesAndGivesEveryBatchBack");
  RecordingBatchPool pool({224, 224, 3}, 32, HostMemory::pinned);
  {
    DeviceFeeder feeder(*gpu, {.depth = 3});
    for (int id = 0; id < 3; ++id) feeder.stage(pool.make(id));
  }
  EXPECT_EQ(pool.returned_ids().size(), 3u);
}

}  // namespace
}  // namespace conveyor
