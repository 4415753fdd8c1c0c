// What a running pipeline has done so far: per-stage counts and busy time, the output queue's occupancy,
// what was skipped and why, and how long the consumer waited. A snapshot, taken at any time from an
// iterator (Iterator::stats()); the pipeline keeps the figures in atomics, so taking one costs the
// workers nothing.
#pragma once

#include <chrono>
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

// An element that stayed in one stage longer than PipelineOptions::stall_limit (the watchdog's report).
struct StallReport {
  std::string stage;  // the stage's name, as in StageStats
  std::string path;
  std::uint64_t index = 0, epoch = 0;   // who the element is (Sample::index, Sample::epoch)
  std::chrono::nanoseconds elapsed{0};  // in the stage when the watchdog saw it
  int worker = -1;                      // arena slot of its thread: the trace's "worker N" track
  std::uint64_t thread_id = 0;          // the thread's OS id (gettid), for a debugger or /proc
  bool abandoned = false;               // given up (abandon_stalled under on_error = skip)
};

// Remote shards (http(s)://, s3://) read by a tar_shards dataset, over every iterator of the dataset so far.
struct RemoteReadStats {
  std::uint64_t shards_opened = 0;     // remote shards opened for reading (also to count their samples)
  std::uint64_t cache_hits = 0;        // of those, read from the shard cache (ShardCacheOptions)
  std::uint64_t cache_misses = 0;      // fetched from the store and written to the cache
  std::uint64_t uncached = 0;          // fetched, not kept: no cache, or another process was fetching it, or
                                       // too large for the cache, or a reader that stopped before the end
  std::uint64_t bytes_fetched = 0;     // bytes received from servers (object bodies; retries included)
  std::uint64_t bytes_from_cache = 0;  // bytes read from cached files
  std::uint64_t evictions = 0;         // cached shards this process deleted to stay under the cap
  std::uint64_t retries = 0;           // requests made again after a transient failure
};

// One producer of the batches of a BatchSource (conveyor/batch_source.h): a data service's worker, or the
// trainer's own cores.
struct SourcePart {
  std::string name;              // "local", "worker 10.77.0.2:41234"
  std::uint64_t batches = 0;     // batches it delivered to the consumer
  std::uint64_t elements = 0;    // their samples
  std::uint64_t wire_bytes = 0;  // bytes received from it (0 for work done in this process)
  std::uint64_t shared_bytes = 0;  // bytes it lent through shared memory instead (a worker of this host)
  double busy_seconds =
      0;  // time it had work of this consumer's in hand: elements / busy_seconds is its rate
  std::uint64_t failures = 0;  // times it was lost and its work handed to another
  // Seconds from the stream's start to its first batch delivered to the consumer (0: none yet): how long a
  // worker took to serve (its streams opened, its chain built, its first splits made).
  double first_batch_seconds = 0;
};

struct PipelineStats {
  static constexpr std::size_t kMaxSkippedSamples = 100;
  static constexpr std::size_t kMaxStallReports = 100;

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
  std::uint64_t consumer_waits = 0;        // calls to next() that found nothing ready
  std::uint64_t consumer_wait_ns = 0;      // time the consumer spent waiting in those calls
  std::size_t pool_buffers = 0;            // batch buffers allocated so far (never above pool_capacity)
  std::size_t pool_capacity = 0;           // the most the pool may allocate
  bool pinned = false;                     // batch buffers are page-locked (a GPU was present)
  std::uint64_t stalls = 0;                // elements the watchdog reported (once per element and stage)
  std::uint64_t abandoned = 0;             // of those, given up (also counted in skipped, reason "stalled")
  std::vector<StallReport> stall_reports;  // the first kMaxStallReports
  std::size_t decode_memory_budget = 0;    // PipelineOptions::decode_memory_budget (0: none)
  std::size_t decode_memory_peak = 0;      // most bytes reserved by decodes at once
  std::uint64_t decode_memory_waits = 0;   // decodes that waited for others to give memory back
  RemoteReadStats remote;                  // tar shards from servers: the cache's hits, bytes fetched
  // Batches from a BatchSource: who made them, and a line on anything the consumer should know (such as
  // "no worker reachable: training on local cores"). Empty for a chain run here.
  std::vector<SourcePart> source_parts;
  std::string source_note;
};

// A few human-readable lines: stage table, queue, skips, waits.
std::string format_stats(const PipelineStats& stats);

}  // namespace conveyor
