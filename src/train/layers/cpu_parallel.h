// Parallel loops of the CPU reference. Reductions split the rows into a fixed number of chunks that
// does not depend on the thread count, then add the chunks' partial sums in order: the same inputs give
// the same bits on 2 or 64 cores.
#pragma once

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "src/core/tsan.h"

namespace conveyor::nn::cpu {

// A parallel loop's fork and join, as ThreadSanitizer must see them (src/core/tsan.h): what the caller did
// before fork() happens before every iteration, and every iteration before what the caller does after the
// ForkJoin dies. The iterations are not ordered among themselves, so a race between two of them is still
// reported. Call fork() after making the loop's body, just before the loop; the body must reach the
// ForkJoin without reading the caller's memory first (tbb::parallel_for over a blocked_range copies the body
// into its task, which the suppressions in tests/tsan.supp cover; the index form would read the caller's).
class ForkJoin {
 public:
  ForkJoin() = default;
  ~ForkJoin() { CONVEYOR_TSAN_ACQUIRE(&join_); }
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;
  void fork() const noexcept { CONVEYOR_TSAN_RELEASE(&fork_); }
  void begin_iteration() const noexcept { CONVEYOR_TSAN_ACQUIRE(&fork_); }
  void end_iteration() const noexcept { CONVEYOR_TSAN_RELEASE(&join_); }

 private:
  char fork_ = 0, join_ = 0;  // only their addresses are used
};

// Calls body(begin, end) on disjoint ranges covering [0, count), in parallel.
template <class Body>
void parallel_ranges(std::size_t count, std::size_t grain, Body&& body) {
  if (count == 0) return;
  const ForkJoin fork_join;
  const auto ranges = [&](const tbb::blocked_range<std::size_t>& r) {
    fork_join.begin_iteration();
    body(r.begin(), r.end());
    fork_join.end_iteration();
  };
  fork_join.fork();
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, std::max<std::size_t>(grain, 1)), ranges);
}

// Per-channel sums over `rows` rows: add_row(row, acc) adds row `row`'s contribution to acc[0..channels).
// Deterministic (fixed chunks, summed in order); accumulates in double.
template <class AddRow>
std::vector<double> channel_sums(std::size_t rows, int channels, AddRow&& add_row) {
  constexpr std::size_t kChunks = 64;
  const std::size_t chunk_rows = (rows + kChunks - 1) / kChunks;
  const std::size_t chunks = chunk_rows ? (rows + chunk_rows - 1) / chunk_rows : 0;
  const auto width = static_cast<std::size_t>(channels);
  std::vector<double> partial(chunks * width, 0.0);
  parallel_ranges(chunks, 1, [&](std::size_t first, std::size_t last) {
    for (std::size_t chunk = first; chunk < last; ++chunk) {
      double* acc = partial.data() + chunk * width;
      const std::size_t end = std::min(rows, (chunk + 1) * chunk_rows);
      for (std::size_t row = chunk * chunk_rows; row < end; ++row) add_row(row, acc);
    }
  });
  std::vector<double> sums(width, 0.0);
  for (std::size_t chunk = 0; chunk < chunks; ++chunk)
    for (std::size_t c = 0; c < width; ++c) sums[c] += partial[chunk * width + c];
  return sums;
}

}  // namespace conveyor::nn::cpu
