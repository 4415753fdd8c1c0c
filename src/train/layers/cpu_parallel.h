// Parallel loops of the CPU reference. Reductions split the rows into a fixed number of chunks that
// does not depend on the thread count, then add the chunks' partial sums in order: the same inputs give
// the same bits on 2 or 64 cores.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "src/core/marked_parallel_for.h"

namespace conveyor::nn::cpu {

// Calls body(begin, end) on disjoint ranges covering [0, count), in parallel (the fork and join marked for
// ThreadSanitizer: src/core/marked_parallel_for.h).
template <class Body>
void parallel_ranges(std::size_t count, std::size_t grain, Body&& body) {
  detail::marked_parallel_for(count, grain, body);
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
