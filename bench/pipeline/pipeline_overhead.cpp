// pipeline_overhead: what the engine itself costs per element (choosing it, handing it between the
// stages, batching it), measured with a map that only fills its slot with memset. Small images at high
// rates (Fashion-MNIST-like 28x28x1) are where this cost would show; the real ops are measured by
// pipeline_throughput.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "conveyor/dataset.h"

namespace {

constexpr std::size_t kElements = 50'000;

void BM_EngineOverhead(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int side = static_cast<int>(state.range(1));
  const conveyor::ImageShape shape{side, side, 1};
  std::vector<std::vector<std::uint8_t>> buffers(kElements, std::vector<std::uint8_t>(16, 1));
  const conveyor::BatchedDataset batches =
      conveyor::Dataset::memory(std::move(buffers))
          .map(conveyor::SampleOp{"fill",
                                  [shape](conveyor::Sample& sample) {
                                    const conveyor::ImageView out = sample.output(shape);
                                    std::memset(out.data, static_cast<int>(sample.seed & 0xFF),
                                                shape.bytes());
                                    sample.publish();
                                  }})
          .with_options({.threads = threads})
          .batch(256)
          .prefetch(4);
  std::size_t elements = 0;
  for (auto _ : state) {
    for (const conveyor::Batch& batch : batches) elements += batch.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(elements));
}
BENCHMARK(BM_EngineOverhead)
    ->ArgNames({"threads", "side"})
    ->ArgsProduct({{1, 2, 4, 8, 16}, {28, 224}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
