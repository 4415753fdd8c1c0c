// Reads one rank's segments of one epoch (see shard_plan.h) ahead of the pipeline, on threads of its own,
// and hands their samples out interleaved, in an order that never depends on which thread was faster.
//
// Interleaving (tf.data's interleave with cycle_length = parallel_shards, block_length = 1, deterministic):
// next() takes one sample from each segment of a rotation of up to parallel_shards segments in turn. The
// rotation starts with the first parallel_shards segments; a segment that has given all its samples
// leaves it, and the next segment not yet in it takes its place in the turn. So the order depends only on
// the segments and their lengths, and all parallel_shards readers work at once, so that one reader's rate
// does not cap the stream (when samples came out one whole segment after another, tar shards ran at 0.79x
// loose files on 16 cores: bench/results/2026-11-23-h100-run3/). A segment
// without a known first index (a shard of unknown count, read without an index) numbers its samples by
// their place in the stream; the segments then come one after another (a rotation of one), so that the
// index stays the sample's position in the epoch's order.
//
// As ready (in_order = false, for pipelines that deliver out of order anyway; tf.data's interleave with
// deterministic = false): when the segment whose turn it is has no sample yet, next() takes one from the
// next segment of the rotation that has, instead of waiting. Every sample keeps its index; only the order
// depends on the readers' timing, so one reader held up (a server slow to send, a thread not scheduled)
// no longer holds up the others.
//
// 2 x parallel_shards threads each stream one segment at a time into that segment's queue (at most
// queued_samples samples; the thread waits when it is full and goes on once next() has taken it down to
// half, so that it reads several samples per wake-up), taking the next segment not yet started, at
// most parallel_shards segments past those in the rotation. So while the rotation's segments are read,
// the next parallel_shards segments are opened and their queues filled: a segment that joins the rotation
// has its first samples waiting. Without them the rotation's segments, taken from in turn and so ending
// together, all opened their successors at once when they ended, and next() waited for those starts
// (a new connection and its first bytes, over HTTP) every parallel_shards shards. The read-ahead holds at
// most 2 x parallel_shards x queued_samples samples.
//
// A shard that cannot go on (unreadable, truncated, an HTTP failure after the retries) ends its segment:
// the sample being read gets the error (its kind and message) and each sample the segment still owed gets
// a "shard_failed" error, so the number of elements does not change; the pipeline fails or counts a skip
// for each. A shard with fewer samples than its count says owes the rest as "index_mismatch" errors, and
// a segment that should end at the shard's end checks that it does (the last sample gets the error when
// the shard has more).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "src/sources/cancellation.h"
#include "src/sources/shard_plan.h"
#include "src/sources/shard_set.h"
#include "src/sources/streamed_sample.h"

namespace conveyor::detail {

// One sample of the rank's epoch with its place in the epoch's order.
struct StreamedElement {
  std::uint64_t index = 0;
  bool padding = false;
  StreamedSamplePtr sample;
};

class ShardStreamer {
 public:
  // Starts reading at once. `pool` must outlive the streamer; max_member_bytes: image members over this
  // fail as "too_large" (0: no limit); in_order: the interleave's order (above).
  ShardStreamer(std::shared_ptr<const ShardSet> shards, std::vector<Segment> segments,
                StreamedSamplePool& pool, std::size_t max_member_bytes, bool in_order = true);
  // Cancels and joins the threads.
  ~ShardStreamer();
  ShardStreamer(const ShardStreamer&) = delete;
  ShardStreamer& operator=(const ShardStreamer&) = delete;

  // The next sample in the interleaved order; waits for it. nullopt at the end, or once cancelled.
  std::optional<StreamedElement> next();
  // Stops the threads' reads and waits and makes next() return nullopt. Callable from any thread.
  void cancel();

 private:
  struct Queue {
    std::deque<StreamedSamplePtr> samples;
    bool done = false;        // its thread has put in everything it will
    std::uint64_t taken = 0;  // samples next() took from it
    // Its reader waits here while the queue is full, and is woken once next() has taken it down to half:
    // it then reads several samples in one go, instead of every reader waking at every sample taken.
    std::condition_variable room;
  };

  // As ready: the position in rotation_ to take from now (under mutex_).
  std::size_t ready_turn() const noexcept;
  void work() noexcept;
  void read_segment(std::size_t s);
  // Waits for room in segment s's queue; false when cancelled.
  bool push(std::size_t s, StreamedSamplePtr sample);
  // The samples segment s still owes, from shard sample `from` on: the first fails with `kind`, the
  // others with `rest_kind`, all for `reason`.
  void owe(std::size_t s, std::uint64_t from, const std::string& kind, const std::string& rest_kind,
           const std::string& reason);

  const std::shared_ptr<const ShardSet> shards_;
  const std::vector<Segment> segments_;
  StreamedSamplePool& pool_;
  const TarFormat format_;
  const std::size_t parallel_;
  const std::size_t queued_;
  const bool in_order_;
  Cancellation cancellation_;

  std::mutex mutex_;
  std::condition_variable ready_;      // a sample or a segment's end arrived; or cancel
  std::condition_variable start_;      // a segment left the rotation: one more may start
  std::vector<Queue> queues_;          // one per segment (made once: a Queue does not move)
  std::size_t next_segment_ = 0;       // the next segment a thread will start
  std::vector<std::size_t> rotation_;  // the segments next() takes from in turn (at most parallel_)
  std::size_t turn_ = 0;               // the position in rotation_ of the one next() takes from now
  std::size_t next_in_rotation_ = 0;   // the next segment to join the rotation
  std::uint64_t next_index_ = 0;       // the index after the last sample handed out

  std::vector<std::thread> threads_;  // last: they stop before anything above dies
};

}  // namespace conveyor::detail
