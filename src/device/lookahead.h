// The feeder's staging thread, for feed() when the feeder decodes on the GPU: it takes batches from the
// pipeline and stages them (copy, nvJPEG decode of the deferred samples, CPU fallbacks, augmentation),
// keeping up to `ahead` of them staged, so that neither the wait for the pipeline nor the decoder's host
// work runs on the consumer's thread. A staged batch is handed over (the consumer stream waits for it) only
// when the consumer takes it, so the consumer's queued work never waits for a batch it has not asked for.
// Errors (the pipeline's, the feeder's) reach the consumer in order, where they happened; the thread
// stops after one. Destruction cancels the pipeline, wakes the thread, joins it and releases what was
// staged and not taken. Staging waits for a ring slot the consumer gave back (it may hold the batch before
// the one it asks for); a consumer that asks for a batch while it holds every slot gets the feeder's
// all-slots-held error instead of a wait that would never end.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/dataset.h"
#include "conveyor/progress_watch.h"
#include "src/device/feeder_backend.h"

namespace conveyor::detail {

class Lookahead {
 public:
  // How the staging thread runs: the watch it joins under `name` (none: null), the CPUs it runs on (the
  // pipeline's PipelineOptions::cpus; empty: anywhere).
  struct Thread {
    std::shared_ptr<ProgressWatch> watch;
    std::string name = "feeder staging thread";
    std::vector<int> cpus;
  };
  // ahead >= 1. The backend is kept alive by the lookahead.
  Lookahead(std::shared_ptr<FeederBackend> backend, BatchIterator batches, std::size_t ahead, Thread thread);
  Lookahead(std::shared_ptr<FeederBackend> backend, BatchIterator batches, std::size_t ahead)
      : Lookahead(std::move(backend), std::move(batches), ahead, Thread{}) {}
  ~Lookahead();
  Lookahead(const Lookahead&) = delete;
  Lookahead& operator=(const Lookahead&) = delete;

  // The next staged batch, handed over to the consumer; std::nullopt at the end. Blocks until one is
  // staged. Rethrows what stopped the thread.
  std::optional<DeviceBatch> next();
  PipelineStats stats() const { return batches_.stats(); }
  // The pipeline's state recorded right after it gave the batch next() handed out last (before the
  // first: where it started); the pipeline itself is further ahead. Rethrows why it could not be recorded
  // (an out-of-order pipeline has no single position).
  IteratorState state() const;

 private:
  void run() noexcept;
  // Waits until the ring has a slot no one holds; false when the lookahead is stopping.
  bool wait_for_a_slot();
  std::variant<IteratorState, std::exception_ptr> state_now() const noexcept;

  std::shared_ptr<FeederBackend> backend_;
  BatchIterator batches_;  // used by the thread only (stats() and cancel() are thread-safe)
  const std::size_t ahead_;
  const Thread thread_options_;

  std::mutex mutex_;
  std::condition_variable changed_;
  // A staged batch with the pipeline's state after it (or why there is none).
  struct Staged {
    DeviceBatch batch;
    std::variant<IteratorState, std::exception_ptr> state;
  };
  std::deque<std::variant<Staged, std::exception_ptr>> staged_;
  std::variant<IteratorState, std::exception_ptr> handed_state_;  // consumer's thread only
  bool finished_ = false;                                         // the thread has pushed its last item
  bool stopping_ = false;
  bool waiting_for_slot_ = false;  // the thread has a batch and waits for the consumer to give a slot back
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace conveyor::detail
