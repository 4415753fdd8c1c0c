// gpu_twin --data DIR [--batches N] [--batch N] [--device auto|cpu|gpu:N]: a pixel op of the user's own with
// a CUDA twin (random_invert.h), placed on the GPU like the library's flip and distort.
//
// The chain is decode_random_resized_crop(224), random_invert(0.5), flip_horizontal(0.5) over an ImageFolder.
// A GpuTwins registry that knows "random_invert" (GpuTwins::library() plus the twin) goes to the feeder;
// place_pixel_ops moves the trailing ops whose twin it knows: random_invert runs on the GPU on each batch's
// pixels, then flip runs fused with normalize. The program prints where each op runs, then feeds the same
// batches twice, once through the GPU feeder and once with every op on the CPU (a CPU feeder), and compares
// the normalized images byte for byte: a twin must give the bytes its op gives.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/cuda/device.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/gpu_twins.h"
#include "conveyor/dataset.h"
#include "conveyor/ops.h"
#include "conveyor/version.h"
#include "device_option.h"
#include "random_invert.h"
#if CONVEYOR_BUILT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using namespace conveyor;

ops::NormalizeParams imagenet() {
  ops::NormalizeParams params;
  params.mean = {123.675f, 116.28f, 103.53f, 0.f};
  params.std = {58.395f, 57.12f, 57.375f, 1.f};
  return params;
}

// The batch's normalized images in host memory (copied from the GPU when they are there).
std::vector<std::uint8_t> host_images(const DeviceBatch& batch) {
  const TensorView& images = batch.images();
  std::vector<std::uint8_t> bytes(images.bytes());
  if (!images.on_device()) {
    std::memcpy(bytes.data(), images.data, bytes.size());
    return bytes;
  }
#if CONVEYOR_BUILT_WITH_CUDA
  // The feeder made the batch ready on its consumer stream; wait for it before reading.
  if (cudaDeviceSynchronize() != cudaSuccess ||
      cudaMemcpy(bytes.data(), images.data, bytes.size(), cudaMemcpyDeviceToHost) != cudaSuccess)
    throw std::runtime_error("gpu_twin: cannot copy the images back");
#endif
  return bytes;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"A pixel op of your own with a CUDA twin, placed on the GPU like flip and distort."};
  std::string data, device = "auto";
  int batches = 8, batch_size = 32;
  app.add_option("--data", data, "an ImageFolder tree of JPEGs (required)")->required();
  app.add_option("--batches", batches, "batches to compare")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--batch", batch_size, "images per batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--device", device, "auto, cpu, gpu or gpu:N")
      ->capture_default_str()
      ->check(example_support::device_spec());
  CLI11_PARSE(app, argc, argv);

  const std::vector<SampleOp> chain{ops::decode_random_resized_crop(224),
                                    gpu_twin_example::random_invert(0.5), ops::flip_horizontal(0.5)};
  GpuTwins twins = GpuTwins::library();
#if CONVEYOR_BUILT_WITH_CUDA
  twins.add("random_invert", gpu_twin_example::random_invert_twin());
#endif
  const Placement placement = resolve(DeviceSpec::parse(device));
  FeederOptions options{.depth = 3, .normalize = imagenet(), .gpu_twins = std::make_shared<GpuTwins>(twins)};
  const std::vector<SampleOp> stays = place_pixel_ops(chain, placement, options);

  std::printf("gpu_twin: placement %s\n", placement.description.c_str());
  for (const SampleOp& op : stays) std::printf("  in the pipeline (CPU): %s\n", op.name.c_str());
  for (const PlacedPixelOp& op : options.pixel_ops)
    std::printf("  on the device, its GPU twin on the pixels: %s\n", op.op.name.c_str());
  if (options.augment.flip_horizontal)
    std::printf("  on the device, fused with normalize: flip_horizontal\n");

  const auto dataset = [&](const std::vector<SampleOp>& maps) {
    Dataset samples = Dataset::image_folder(data).take(static_cast<std::uint64_t>(batches * batch_size));
    for (const SampleOp& op : maps) samples = samples.map(op);
    return samples.with_options({.deterministic = true, .seed = 7})
        .batch(static_cast<std::size_t>(batch_size));
  };
  DeviceFeeder feeder(placement, options);
  DeviceFeeder reference(resolve(DeviceSpec::parse("cpu")), {.depth = 3, .normalize = imagenet()});
  DeviceBatchIterator placed = feeder.feed(dataset(stays));
  DeviceBatchIterator on_cpu = reference.feed(dataset(chain));
  int compared = 0, equal = 0;
  std::size_t images = 0, inverted = 0;
  for (;;) {
    std::optional<DeviceBatch> a = placed.next();
    std::optional<DeviceBatch> b = on_cpu.next();
    if (!a || !b) break;
    for (const SampleInfo& info : a->samples())
      inverted += gpu_twin_example::draw_invert(0.5, info.seed, op_stream(gpu_twin_example::kInvertStream, 1))
                      ? 1
                      : 0;
    images += a->size();
    ++compared;
    equal += host_images(*a) == host_images(*b) ? 1 : 0;
  }
  std::printf(
      "gpu_twin: %d batches, %zu images, %zu inverted; images equal to the all-CPU chain's in %d of %d\n",
      compared, images, inverted, equal, compared);
  return compared > 0 && equal == compared ? 0 : 1;
} catch (const std::exception& error) {
  std::fprintf(stderr, "gpu_twin: %s\n", error.what());
  return 1;
}
