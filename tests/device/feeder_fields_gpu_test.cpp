// Issue 35 on a GPU: batches with masks, boxes and multi-hot labels fed to the GPU by the default placement
// (place_pixel_ops: the flip stays in the pipeline because the samples have fields, distort moves to the
// GPU) hold exactly what the CPU feeder gives for the same chain: fields bit for bit, images() bit for bit.
// So the masks' and boxes' consistency, tested on the CPU (tests/ops/field_consistency_test.cpp), holds on
// the GPU too. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/stream.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "src/device/cuda_check.h"
#include "support/scenes.h"

namespace conveyor {
namespace {

constexpr const char* kTest = "feeder_fields_gpu_test";
constexpr ops::DistortOptions kJitter{.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1};

std::vector<std::uint8_t> bytes_of(const TensorView& view, cudaStream_t stream) {
  std::vector<std::uint8_t> host(view.bytes());
  if (view.device < 0) {
    std::memcpy(host.data(), view.data, view.bytes());
    return host;
  }
  CONVEYOR_CUDA(cudaMemcpyAsync(host.data(), view.data, view.bytes(), cudaMemcpyDeviceToHost, stream), kTest);
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), kTest);
  return host;
}

BatchedDataset fields_dataset() {
  return Dataset::from_source(testing::scene_source(21, 90, 120))
      .map(ops::decode_random_resized_crop(64))
      .map(ops::flip_horizontal(0.5))
      .map(ops::distort(kJitter))
      .with_options({.threads = 4})
      .batch(8, BatchOptions{.num_classes = 6});
}

ops::NormalizeParams params() {
  ops::NormalizeParams p;
  p.mean = {123.675f, 116.28f, 103.53f, 0.f};
  p.std = {58.395f, 57.12f, 57.375f, 1.f};
  p.type = ops::ElementType::bfloat16;
  return p;
}

// Every tensor of every batch, in order: the fields, then images().
std::vector<std::vector<std::uint8_t>> everything(DeviceFeeder& feeder, const BatchedDataset& dataset) {
  const cudaStream_t stream = feeder.placement().gpu ? cuda::consumer_stream(feeder) : nullptr;
  std::vector<std::vector<std::uint8_t>> out;
  for (DeviceBatch& batch : feeder.feed(dataset)) {
    for (const TensorView* t : {&batch.masks(), &batch.boxes(), &batch.box_classes(), &batch.box_crowd(),
                                &batch.box_counts(), &batch.multi_hot(), &batch.images()}) {
      EXPECT_TRUE(*t);
      EXPECT_EQ(t->device, batch.device());
      out.push_back(bytes_of(*t, stream));
    }
  }
  return out;
}

TEST(FeederFieldsGpu, FieldsAndImagesEqualTheCpuFeeders) {
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  const Placement gpu = resolve(DeviceSpec::parse("gpu:0"));
  FeederOptions options{.depth = 3, .normalize = params()};
  const BatchedDataset placed = place_pixel_ops(fields_dataset(), gpu, options);
  ASSERT_TRUE(options.augment.distort.has_value());
  ASSERT_FALSE(options.augment.flip_horizontal.has_value()) << "a chain with masks and boxes keeps its flip";
  DeviceFeeder on_gpu(gpu, options);
  DeviceFeeder on_cpu(resolve(DeviceSpec::parse("cpu")), {.depth = 3, .normalize = params()});
  const auto a = everything(on_gpu, placed);
  const auto b = everything(on_cpu, fields_dataset());
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i], b[i]) << "tensor " << i % 7 << " of batch " << i / 7;
}

TEST(FeederFieldsGpu, HybridDecodingLeavesSamplesWithFieldsToTheCpu) {
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  const Placement gpu = resolve(DeviceSpec::parse("gpu:0"));
  FeederOptions options{.depth = 3, .normalize = params()};
  options.decode.enabled = true;
  const BatchedDataset placed = place_pixel_ops(fields_dataset(), gpu, options);
  DeviceFeeder on_gpu(gpu, options);
  DeviceFeeder on_cpu(resolve(DeviceSpec::parse("cpu")), {.depth = 3, .normalize = params()});
  EXPECT_EQ(everything(on_gpu, placed), everything(on_cpu, fields_dataset()));
}

}  // namespace
}  // namespace conveyor
