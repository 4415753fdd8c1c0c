// What a running pipeline has done so far: per-stage counts and busy time, the output queue's occupancy,
// what was skipped and why, and how long the consumer waited. A snapshot, taken at any time from an
// iterator (Iterator::stats()); the pipeline keeps the figures in atomics, so taking one costs the
// workers nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace conveyor {

// One stage of the pipeline: "source" (choose the next element, reserve its slot), "read" (file bytes),
// one entry per map and filter (named after the SampleOp), "batch" (copy into the slot when the last op
// did not write there) and "collect" (count the element into its batch, in order).
struct StageStats {
  std::string name;
  std::uint64_t count = 0;     // elements that went through the stage
  std::uint64_t busy_ns = 0;   // time spent in the stage, summed over threads
  std::uint64_t failures = 0;  // elements on which the stage threw
};

// The queue of ready batches (or samples) between the pipeline and the consumer.
struct QueueStats {
  std::size_t current = 0;   // ready now
  std::size_t max = 0;       // most ever ready at once
  double mean = 0;           // average number ready when the consumer asked for the next one
  std::size_t capacity = 0;  // the prefetch depth: the pipeline pauses when this many are ready
};

// One sample that on_error = skip dropped.
struct SkippedSample {
  std::string path;
  std::string stage;
  std::string reason;
};

struct PipelineStats {
  static constexpr std::size_t kMaxSkippedSamples = 100;

  int threads = 0;                 // threads of the iterator's task arena
  std::size_t max_in_flight = 0;   // elements processed at once at most (the pipeline's tokens)
  std::uint64_t elements_in = 0;   // elements chosen by the source stage
  std::uint64_t elements_out = 0;  // elements delivered to the consumer (in batches or one by one)
  std::uint64_t batches = 0;       // batches delivered to the consumer
  std::uint64_t filtered = 0;      // elements a filter rejected
  std::uint64_t skipped = 0;       // elements dropped because a stage failed and on_error = skip
  std::uint64_t deferred = 0;      // elements whose op left the pixels to a stage after batching (defer.h)
  std::map<std::string, std::uint64_t> skip_reasons;  // "stage: kind" -> count, e.g. "read: io"
  std::vector<SkippedSample> skipped_samples;         // the first kMaxSkippedSamples skipped
  std::vector<StageStats> stages;                     // in pipeline order
  QueueStats queue;
  std::uint64_t consumer_waits = 0;    // calls to next() that found nothing ready
  std::uint64_t consumer_wait_ns = 0;  // time the consumer spent waiting in those calls
  std::size_t pool_buffers = 0;        // batch buffers allocated so far (never above pool_capacity)
  std::size_t pool_capacity = 0;       // the most the pool may allocate
  bool pinned = false;                 // batch buffers are page-locked (a GPU was present)
};

// A few human-readable lines: stage table, queue, skips, waits.
std::string format_stats(const PipelineStats& stats);

}  // namespace conveyor
