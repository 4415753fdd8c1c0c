// A user's pixel op with a CUDA twin (examples/gpu_twin: random_invert) placed on the GPU through a GpuTwins
// registry, before the fused flip: the GPU feeder's pixels() and images() equal the CPU feeder's for the same
// chain run as maps, bit for bit, and the twin changed some images (its coin comes from each sample's seed).
// Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/gpu_twins.h"
#include "conveyor/cuda/stream.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "examples/gpu_twin/random_invert.h"
#include "src/device/cuda_check.h"
#include "support/test_images.h"

namespace conveyor {
namespace {

constexpr const char* kTest = "feeder_twins_gpu_test";

std::vector<std::uint8_t> host_bytes(const TensorView& view, cudaStream_t stream) {
  std::vector<std::uint8_t> host(view.bytes());
  if (view.device < 0) {
    std::memcpy(host.data(), view.data, view.bytes());
    return host;
  }
  CONVEYOR_CUDA(cudaMemcpyAsync(host.data(), view.data, view.bytes(), cudaMemcpyDeviceToHost, stream), kTest);
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), kTest);
  return host;
}

std::vector<SampleOp> chain() {
  return {ops::decode_random_resized_crop(48), gpu_twin_example::random_invert(0.5),
          ops::flip_horizontal(0.5)};
}

BatchedDataset dataset(const std::vector<SampleOp>& maps) {
  std::vector<std::vector<std::uint8_t>> files;
  for (int i = 0; i < 40; ++i)
    files.push_back(testing::make_jpeg(70 + i, 90, 3, 200 + static_cast<std::uint64_t>(i)));
  Dataset samples = Dataset::memory(files);
  for (const SampleOp& op : maps) samples = samples.map(op);
  return samples.with_options({.threads = 3, .seed = 5}).batch(8);
}

// pixels() then images() of every batch.
std::vector<std::vector<std::uint8_t>> tensors(DeviceFeeder& feeder, const BatchedDataset& batches) {
  const cudaStream_t stream = feeder.placement().gpu ? cuda::consumer_stream(feeder) : nullptr;
  std::vector<std::vector<std::uint8_t>> out;
  for (DeviceBatch& batch : feeder.feed(batches)) {
    out.push_back(host_bytes(batch.pixels(), stream));
    out.push_back(host_bytes(batch.images(), stream));
  }
  return out;
}

TEST(FeederTwinsGpu, AUsersPixelTwinGivesTheBytesOfItsOp) {
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  const Placement gpu = resolve(DeviceSpec::parse("gpu:0"));
  ops::NormalizeParams params;
  FeederOptions options{.depth = 3, .normalize = params};
  options.gpu_twins = std::make_shared<GpuTwins>(
      GpuTwins::library().add("random_invert", gpu_twin_example::random_invert_twin()));
  const std::vector<SampleOp> stays = place_pixel_ops(chain(), gpu, options);
  ASSERT_EQ(stays.size(), 1u);
  ASSERT_EQ(options.pixel_ops.size(), 1u);
  ASSERT_TRUE(options.augment.flip_horizontal.has_value());
  DeviceFeeder on_gpu(gpu, options);
  DeviceFeeder on_cpu(resolve(DeviceSpec::parse("cpu")), {.depth = 3, .normalize = params});
  const auto a = tensors(on_gpu, dataset(stays));
  // images(): the whole chain as maps on the CPU. pixels(): the GPU's hold the twin's result (it works in
  // place) but not the fused flip's, so they equal the CPU pipeline's up to the invert.
  const auto b = tensors(on_cpu, dataset(chain()));
  const auto c = tensors(on_cpu, dataset({chain()[0], chain()[1]}));
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), c.size());
  for (std::size_t k = 0; k < a.size(); k += 2) {
    EXPECT_EQ(a[k], c[k]) << "pixels of batch " << k / 2;
    EXPECT_EQ(a[k + 1], b[k + 1]) << "images of batch " << k / 2;
  }
  // The twin did something: the pixels differ from those of the chain without it.
  const auto d = tensors(on_cpu, dataset({chain()[0]}));
  EXPECT_NE(a[0], d[0]);
}

}  // namespace
}  // namespace conveyor
