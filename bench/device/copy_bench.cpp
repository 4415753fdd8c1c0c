// copy_bench: host-to-device bandwidth for one ImageNet batch (256 x 224x224x3 uint8 = 38.5 MB):
//   H2D/pinned     cudaMemcpyAsync from page-locked memory (what DeviceFeeder does with pool batches)
//   H2D/pageable   the same from ordinary heap memory (what a naive loader does)
//   Feeder/stage   DeviceFeeder::stage on pinned batches, waiting for `ready`: the copy plus the feeder's
//   cost
// Times are measured with CUDA events (manual time); bytes_per_second is the bandwidth.
//   copy_bench --benchmark_format=json --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/cuda/device.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/stream.h"
#include "src/device/cuda_check.h"
#include "src/device/cuda_handles.h"

namespace {

using namespace conveyor;

constexpr ImageShape kShape{224, 224, 3};
constexpr std::size_t kBatch = 256;
constexpr std::size_t kPixelBytes = kBatch * 224 * 224 * 3;
constexpr const char* kContext = "copy_bench";

// Page-locked host memory for the benchmark's lifetime.
struct PinnedBytes {
  void* data = nullptr;
  explicit PinnedBytes(std::size_t bytes) {
    CONVEYOR_CUDA(cudaHostAlloc(&data, bytes, cudaHostAllocDefault), kContext);
  }
  ~PinnedBytes() { cudaFreeHost(data); }
  PinnedBytes(const PinnedBytes&) = delete;
  PinnedBytes& operator=(const PinnedBytes&) = delete;
};

struct DeviceBytes {
  void* data = nullptr;
  explicit DeviceBytes(std::size_t bytes) { CONVEYOR_CUDA(cudaMalloc(&data, bytes), kContext); }
  ~DeviceBytes() { cudaFree(data); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
};

bool skip_without_gpu(benchmark::State& state) {
  if (!list_gpus().empty()) return false;
  state.SkipWithError(("no GPU visible: " + gpu_unavailable_reason()).c_str());
  return true;
}

void copy_loop(benchmark::State& state, const void* host) {
  cuda::DeviceGuard guard(0);
  DeviceBytes device(kPixelBytes);
  cuda::Stream stream;
  cuda::Event start(true), end(true);
  for (auto _ : state) {
    start.record(stream.get());
    CONVEYOR_CUDA(cudaMemcpyAsync(device.data, host, kPixelBytes, cudaMemcpyHostToDevice, stream.get()),
                  kContext);
    end.record(stream.get());
    end.synchronize();
    state.SetIterationTime(cuda::Event::elapsed_ms(start, end) / 1000.0);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPixelBytes));
}

void BM_H2D_pinned(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  PinnedBytes host(kPixelBytes);
  std::memset(host.data, 7, kPixelBytes);
  copy_loop(state, host.data);
}

void BM_H2D_pageable(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  std::vector<std::uint8_t> host(kPixelBytes, 7);  // touched, so no page faults are timed
  copy_loop(state, host.data());
}

void BM_Feeder_stage(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const Placement placement = resolve(DeviceSpec::parse("gpu:0"));
  cuda::DeviceGuard guard(placement.device);
  const std::size_t bytes = kPixelBytes + kBatch * sizeof(std::int64_t);
  PinnedBytes host(bytes);
  std::memset(host.data, 7, bytes);
  std::vector<SampleInfo> samples(kBatch);
  detail::BatchBuffer buffer;
  buffer.pixels = static_cast<std::uint8_t*>(host.data);
  buffer.labels = reinterpret_cast<std::int64_t*>(static_cast<std::uint8_t*>(host.data) + kPixelBytes);
  buffer.samples = samples.data();
  buffer.capacity = kBatch;
  buffer.shape = kShape;
  buffer.pinned = true;
  DeviceFeeder feeder(placement, {.depth = static_cast<int>(state.range(0))});
  cuda::Stream compute;
  cuda::Event start(true), end(true);
  std::uint64_t sequence = 0;
  for (auto _ : state) {
    // The buffer outlives the loop: a non-owning handle stands where a pool's handle would.
    Batch batch(std::shared_ptr<detail::BatchBuffer>(&buffer, [](detail::BatchBuffer*) {}), kBatch,
                sequence++, 0);
    start.record(compute.get());
    DeviceBatch staged = feeder.stage(std::move(batch));
    cuda::read_on(staged, compute.get());  // the compute stream waits for the copy
    end.record(compute.get());
    staged.release();
    end.synchronize();
    state.SetIterationTime(cuda::Event::elapsed_ms(start, end) / 1000.0);
  }
  feeder.synchronize();
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.counters["pageable"] = static_cast<double>(feeder.stats().pageable);
}

BENCHMARK(BM_H2D_pinned)->UseManualTime()->Unit(benchmark::kMillisecond)->MinWarmUpTime(0.2);
BENCHMARK(BM_H2D_pageable)->UseManualTime()->Unit(benchmark::kMillisecond)->MinWarmUpTime(0.2);
BENCHMARK(BM_Feeder_stage)
    ->Arg(2)
    ->Arg(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinWarmUpTime(0.2);

}  // namespace

BENCHMARK_MAIN();
