// restore_bench: what it costs to put a new iterator's element order where a saved state says (the work
// Dataset::begin(state) does before its threads start), for an ImageNet-sized epoch of 1,281,167 elements,
// at the start, the middle and the end of the epoch:
//   whole_epoch   shuffle(): a keyed permutation, O(1) whatever the position
//   buffered_10k  shuffle(10'000): replays the draws since the epoch began (index arithmetic, no decode)
//   buffered_all  shuffle(1'281'167): the same with the buffer holding the whole epoch
// and what saving the state costs per element (the pipeline does it for every element it chooses).
// The target (issue 15) is restore <= 100 ms at any position: the counters give the mean wall time of one
// restore (mean_ms) and within_100ms = 1 or 0. On a loaded machine compare the CPU time too.
//
//   restore_bench [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "conveyor/dataset.h"
#include "src/pipeline/element_order.h"

namespace {

using conveyor::detail::ElementOrder;
using conveyor::detail::OrderOp;
using conveyor::detail::RepeatOrder;
using conveyor::detail::ShardOrder;
using conveyor::detail::ShuffleOrder;

constexpr std::size_t kEpoch = 1'281'167;

std::vector<OrderOp> chain(std::size_t buffer) {
  return {ShuffleOrder{buffer, 42}, RepeatOrder{90}, ShardOrder{8, 3}};
}

// The state after `position` elements of epoch 0 (of this shard: 1/8 of the epoch).
std::vector<std::uint64_t> state_at(const std::vector<OrderOp>& ops, std::size_t position) {
  ElementOrder order(kEpoch, ops);
  for (std::size_t i = 0; i < position; ++i) order.next();
  std::vector<std::uint64_t> words(order.state_words());
  order.save(words);
  return words;
}

void restore(benchmark::State& state, std::size_t buffer) {
  const std::size_t position = static_cast<std::size_t>(state.range(0)) * (kEpoch / 8 - 1) / 2;
  const std::vector<OrderOp> ops = chain(buffer);
  const std::vector<std::uint64_t> words = state_at(ops, position);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    ElementOrder order(kEpoch, ops);
    order.restore(words);
    benchmark::DoNotOptimize(order.next());
  }
  const double mean_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      static_cast<double>(state.iterations());
  state.counters["position_in_shard"] = static_cast<double>(position);
  state.counters["mean_ms"] = mean_ms;
  state.counters["within_100ms"] = mean_ms <= 100.0 ? 1 : 0;
  state.SetLabel(position == 0 ? "start of the epoch" : state.range(0) == 1 ? "middle" : "end");
}

void whole_epoch(benchmark::State& state) { restore(state, conveyor::Dataset::whole_epoch); }
void buffered_10k(benchmark::State& state) { restore(state, 10'000); }
void buffered_all(benchmark::State& state) { restore(state, kEpoch); }

BENCHMARK(whole_epoch)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(buffered_10k)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(buffered_all)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(3);

// Choosing one element and saving the state after it, as the source stage does for every element.
void next_and_save(benchmark::State& state) {
  ElementOrder order(kEpoch, chain(conveyor::Dataset::whole_epoch));
  std::vector<std::uint64_t> words(order.state_words());
  for (auto _ : state) {
    if (!order.next()) order.restore(std::vector<std::uint64_t>(words.size(), 0));
    order.save(words);
    benchmark::DoNotOptimize(words.data());
  }
}
BENCHMARK(next_and_save);

}  // namespace

BENCHMARK_MAIN();
