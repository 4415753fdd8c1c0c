// The runs of consecutive samples of a batch that the pipeline decoded itself (not deferred): what crosses to
// the device when the deferred samples' slots are left out of the copy (DeviceDecode::copy_whole_batch off).
// The split spreads the deferred samples evenly (decode_split.h), so at a share s a batch of B has about
// B min(s, 1 - s) runs: one batched copy call (cudaMemcpyBatchAsync) rather than that many calls.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "conveyor/batch.h"

namespace conveyor::detail {

struct SampleRun {
  std::size_t first = 0;  // index of the run's first sample in the batch
  std::size_t count = 0;  // samples in the run, at least 1
  friend bool operator==(const SampleRun&, const SampleRun&) = default;
};

// Replaces `runs` with the runs of samples [0, size) that are not deferred, in order (the vector keeps its
// capacity from batch to batch).
inline void decoded_runs(std::span<const SampleInfo> samples, std::size_t size, std::vector<SampleRun>& runs) {
  runs.clear();
  const std::size_t n = size < samples.size() ? size : samples.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (samples[i].deferred) continue;
    if (!runs.empty() && runs.back().first + runs.back().count == i)
      ++runs.back().count;
    else
      runs.push_back({i, 1});
  }
}

}  // namespace conveyor::detail
