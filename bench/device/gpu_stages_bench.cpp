// gpu_stages_bench: the GPU-side stages of issue 20, one batch of 256 per iteration, on GPU 0.
//   plan/rrc224                     the CPU part of GPU decoding: header + window per image (one thread)
//   nvjpeg_rrc224/<path>            nvJPEG batched decode of 256 JPEGs from CONVEYOR_BENCH_IMAGES (synthetic
//                                   500x375 otherwise), each window resized to 224x224 into a device batch:
//                                   hardware_roi, hardware (whole image, then crop), gpu_hybrid_roi,
//                                   gpu_hybrid, hybrid_roi (Huffman on the CPU)
//   fused_augment/<type>_<layout>   flip + brightness/contrast/saturation/hue + normalize of 256x224x224x3
//                                   uint8 on the device: the parameter draws on the CPU, their upload, both
//                                   kernels (GpuAugmenter::run)
//   normalize_only/fp16_nchw        the GPU normalize it supersedes, for scale
// Each iteration waits for the GPU (real time); warm-up (first batches: allocations, nvJPEG's own set-up)
// happens before timing and is reported as warmup_s. items_per_second is images per second. Runs that cannot
// run here (no GPU, no nvJPEG) are reported as errors saying why.
//   CONVEYOR_BENCH_IMAGES=DIR gpu_stages_bench --benchmark_repetitions=3
//   --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/ops/bench_images.h"
#include "conveyor/cuda/device.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "src/device/augment/gpu_augmenter.h"
#include "src/device/cuda_check.h"
#include "src/device/cuda_handles.h"
#include "src/device/device_memory.h"
#include "src/device/normalize.h"
#include "src/device/nvjpeg/gpu_decode_plan.h"
#include "src/device/nvjpeg/nvjpeg_batch_decoder.h"

namespace {

using namespace conveyor;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kBatch = 256;
constexpr ImageShape kShape{224, 224, 3};
constexpr int kEpochs = 4;  // distinct window draws cycled through, so that windows change between batches

const bench::BenchImages& images() {
  static const bench::BenchImages loaded = bench::load_bench_images(1024);
  return loaded;
}

bool skip_without_gpu(benchmark::State& state) {
  if (!list_gpus().empty()) return false;
  state.SkipWithError(("no GPU visible: " + gpu_unavailable_reason()).c_str());
  return true;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The window plans of kEpochs passes over batch 0..kBatch of the images (image i of the batch is file
// i % files), drawn as the pipeline would: seed sample_seed(7, epoch, i).
std::vector<std::vector<cuda::GpuDecodePlan>> make_plans() {
  const auto& jpegs = images().jpegs;
  std::vector<std::vector<cuda::GpuDecodePlan>> plans(kEpochs);
  for (int epoch = 0; epoch < kEpochs; ++epoch)
    for (std::size_t i = 0; i < kBatch; ++i)
      plans[epoch].push_back(cuda::plan_random_resized_crop(
          jpegs[i % jpegs.size()], {}, sample_seed(7, epoch, i), ops::stream::random_resized_crop));
  return plans;
}

void plan_rrc224(benchmark::State& state) {
  const auto& jpegs = images().jpegs;
  std::uint64_t index = 0;
  for (auto _ : state) {
    const std::size_t i = index % jpegs.size();
    benchmark::DoNotOptimize(cuda::plan_random_resized_crop(jpegs[i], {}, sample_seed(7, 0, index),
                                                            ops::stream::random_resized_crop));
    ++index;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(images().source);
}

void nvjpeg_rrc224(benchmark::State& state, bool hardware, cuda::NvjpegSoftwareBackend software, bool roi) {
  if (skip_without_gpu(state)) return;
  const nvjpeg::LoadResult library = nvjpeg::load();
  if (!library) {
    state.SkipWithError(library.unavailable.c_str());
    return;
  }
  cuda::DeviceGuard guard(0);
  cuda::DeviceMemoryPool pool(0);
  cuda::Stream stream;
  cuda::NvjpegDecoderOptions options;
  options.hardware = hardware;
  options.software = software;
  options.roi = roi;
  cuda::NvjpegBatchDecoder decoder(library.library, pool, options);
  if (hardware && !decoder.hardware()) {
    state.SkipWithError(("no hardware decoder: " + decoder.description()).c_str());
    return;
  }
  const auto& jpegs = images().jpegs;
  const auto plans = make_plans();
  std::vector<std::vector<cuda::NvjpegRequest>> requests(kEpochs);
  for (int epoch = 0; epoch < kEpochs; ++epoch)
    for (std::size_t i = 0; i < kBatch; ++i)
      if (plans[epoch][i].fallback == cuda::GpuDecodeFallback::none)
        requests[epoch].push_back(
            {jpegs[i % jpegs.size()], plans[epoch][i].window, static_cast<std::uint32_t>(i)});
  cuda::DeviceBuffer out = pool.allocate(kBatch * kShape.bytes(), stream.get(), "benchmark batch");
  const cuda::DeviceSlots slots{out.as<std::uint8_t>(), kBatch, kShape, kShape.bytes(),
                                static_cast<std::size_t>(kShape.width) * kShape.channels};
  std::map<std::string, double> paths;
  const auto warm_start = Clock::now();
  for (int epoch = 0; epoch < 2; ++epoch) decoder.decode(requests[epoch], slots, stream.get());
  stream.synchronize();
  const double warmup = seconds_since(warm_start);
  std::size_t decoded = 0, batch = 0;
  for (auto _ : state) {
    const auto& batch_requests = requests[batch++ % kEpochs];
    const auto outcomes = decoder.decode(batch_requests, slots, stream.get());
    stream.synchronize();
    for (const cuda::NvjpegOutcome& outcome : outcomes) {
      paths[cuda::to_string(outcome.path)] += 1;
      decoded += outcome.path != cuda::NvjpegPath::fallback;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(decoded));
  state.counters["warmup_s"] = warmup;
  for (const auto& [path, count] : paths)
    state.counters["share_" + path] = count / static_cast<double>(state.iterations() * kBatch);
  state.SetLabel(decoder.description() + "; " + images().source);
}

void fused_augment(benchmark::State& state, ops::ElementType type, ops::TensorLayout layout) {
  if (skip_without_gpu(state)) return;
  cuda::DeviceGuard guard(0);
  cuda::DeviceMemoryPool pool(0);
  cuda::Stream stream;
  cuda::GpuAugmentOptions options;
  options.draws.flip = cuda::FlipDraw{0.5, ops::stream::flip_horizontal};
  options.draws.distort = cuda::DistortDraw{
      {.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1}, ops::stream::distort};
  options.normalize.mean = {123.675f, 116.28f, 103.53f, 0.f};
  options.normalize.std = {58.395f, 57.12f, 57.375f, 1.f};
  options.normalize.type = type;
  options.normalize.layout = layout;
  cuda::GpuAugmenter augmenter(0, pool, options);
  cuda::DeviceBuffer in = pool.allocate(kBatch * kShape.bytes(), stream.get(), "benchmark input");
  CONVEYOR_CUDA(cudaMemsetAsync(in.data(), 117, kBatch * kShape.bytes(), stream.get()), "gpu_stages_bench");
  cuda::DeviceBuffer out =
      pool.allocate(kBatch * kShape.bytes() * ops::element_size(type), stream.get(), "benchmark output");
  const cuda::DeviceImages batch{in.as<std::uint8_t>(), kBatch, kShape, kShape.bytes()};
  std::vector<std::uint64_t> seeds(kBatch);
  const auto warm_start = Clock::now();
  for (std::size_t i = 0; i < kBatch; ++i) seeds[i] = sample_seed(7, 99, i);
  augmenter.run(batch, seeds, out.data(), stream.get());
  stream.synchronize();
  const double warmup = seconds_since(warm_start);
  std::uint64_t epoch = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) seeds[i] = sample_seed(7, epoch, i);
    ++epoch;
    augmenter.run(batch, seeds, out.data(), stream.get());
    stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kBatch));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kBatch * kShape.bytes()));
  state.counters["warmup_s"] = warmup;
}

void normalize_only(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  cuda::DeviceGuard guard(0);
  cuda::DeviceMemoryPool pool(0);
  cuda::Stream stream;
  ops::NormalizeParams params;
  params.mean = {123.675f, 116.28f, 103.53f, 0.f};
  params.std = {58.395f, 57.12f, 57.375f, 1.f};
  params.type = ops::ElementType::float16;
  params.layout = ops::TensorLayout::chw;
  cuda::DeviceBuffer in = pool.allocate(kBatch * kShape.bytes(), stream.get(), "benchmark input");
  cuda::DeviceBuffer out = pool.allocate(kBatch * kShape.bytes() * 2, stream.get(), "benchmark output");
  ops::normalize_batch_cuda(in.as<std::uint8_t>(), kBatch, kShape, params, out.data(), stream.get());
  stream.synchronize();
  for (auto _ : state) {
    ops::normalize_batch_cuda(in.as<std::uint8_t>(), kBatch, kShape, params, out.data(), stream.get());
    stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kBatch));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kBatch * kShape.bytes()));
}

using cuda::NvjpegSoftwareBackend;
BENCHMARK(plan_rrc224)->Name("plan/rrc224");
BENCHMARK_CAPTURE(nvjpeg_rrc224, hardware_roi, true, NvjpegSoftwareBackend::gpu_hybrid, true)
    ->Name("nvjpeg_rrc224/hardware_roi")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(nvjpeg_rrc224, hardware, true, NvjpegSoftwareBackend::gpu_hybrid, false)
    ->Name("nvjpeg_rrc224/hardware")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(nvjpeg_rrc224, gpu_hybrid_roi, false, NvjpegSoftwareBackend::gpu_hybrid, true)
    ->Name("nvjpeg_rrc224/gpu_hybrid_roi")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(nvjpeg_rrc224, gpu_hybrid, false, NvjpegSoftwareBackend::gpu_hybrid, false)
    ->Name("nvjpeg_rrc224/gpu_hybrid")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(nvjpeg_rrc224, hybrid_roi, false, NvjpegSoftwareBackend::hybrid, true)
    ->Name("nvjpeg_rrc224/hybrid_roi")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fused_augment, fp16_nchw, ops::ElementType::float16, ops::TensorLayout::chw)
    ->Name("fused_augment/fp16_nchw")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(fused_augment, bf16_nhwc, ops::ElementType::bfloat16, ops::TensorLayout::hwc)
    ->Name("fused_augment/bf16_nhwc")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(fused_augment, fp32_nchw, ops::ElementType::float32, ops::TensorLayout::chw)
    ->Name("fused_augment/fp32_nchw")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(normalize_only)->Name("normalize_only/fp16_nchw")->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
