// The running state behind an Iterator: a oneTBB task arena, a driver thread that runs
// tbb::parallel_pipeline in it, the batch pool and the queue of ready items.
//
//   source  (serial_in_order, the driver or a worker): next element from ElementOrder, reserve its slot
//   process (parallel):  read bytes -> maps and filters, in order -> copy into the slot if needed
//   collect (serial_in_order, or out_of_order when not deterministic): count the element into its
//           batch; complete batches (or samples) and errors go to the output queue
//
// Bounds: tokens (max_in_flight) elements in flight; the source stage pauses while `prefetch` items are
// ready; the pool holds prefetch + in-flight + held_batches buffers. Shutdown: the destructor sets the
// stop flag, cancels the task_group_context, cancels the pool and the queue (waking every wait) and joins
// the driver; in-flight elements stop at their next stage boundary.
#pragma once

#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/memory_budget.h"
#include "conveyor/trace.h"
#include "src/memory/batch_pool.h"
#include "src/observe/pipeline_counters.h"
#include "src/pipeline/batch_assembler.h"
#include "src/pipeline/dataset_node.h"
#include "src/pipeline/element.h"
#include "src/pipeline/element_order.h"
#include "src/pipeline/output_queue.h"

namespace conveyor::detail {

class Pipeline {
 public:
  // Starts at `start` (an IteratorState of a pipeline of the same order; the default: the beginning).
  explicit Pipeline(PipelinePlan plan, const IteratorState& start = {});
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  std::optional<Batch> next_batch();
  std::optional<Sample> next_sample();
  PipelineStats stats() const;
  // After the last item next_batch()/next_sample() returned.
  IteratorState state() const;
  // Stops choosing and processing elements and wakes every wait (thread-safe); the driver ends soon after.
  void cancel() noexcept;

 private:
  // ---- driver (pipeline.cpp) ----
  void drive() noexcept;
  // The batch's layout: the sample shape as given or probed, and the fields the samples carry.
  std::optional<BatchLayout> batch_layout();
  std::optional<BatchLayout> probe_layout();
  BatchLayout layout_for(ImageShape image, const Sample* probed) const;
  void start_batching(const BatchLayout& layout);
  void run_pipeline();
  OutputQueue::Popped pop();
  void deliver(OutputQueue::Item item, std::span<const std::uint64_t> state = {});

  // ---- stages (pipeline_stages.cpp) ----
  Element* source_stage(tbb::flow_control& control);
  bool reserve_slot(Element& element, int track, std::chrono::nanoseconds& waited);
  void prepare(Element& element, OrderedElement& order) const;
  void process(Element& element, bool probing) noexcept;
  template <class F>
  bool run_stage(Element& element, std::size_t stage, int track, bool probing, F&& body) noexcept;
  bool wait_for_room(int track, std::chrono::nanoseconds& waited);
  Element* take_free_element(int track, std::chrono::nanoseconds& waited);
  void release(Element& element);
  // collect: the filter's entry (any order) puts elements back in source order when deterministic and
  // hands them to collect_one, under collect_mutex_ (the watchdog collects abandoned elements too).
  void collect(Element& element);
  // An element (or, for an abandoned one, its batch slot) that has finished, in source order.
  struct Arrival {
    bool present = false;
    Element* element = nullptr;  // null: a hole
    std::uint64_t sequence = 0;
    BufferState* buffer = nullptr;  // a hole's slot (batches only)
    std::size_t slot = 0;
  };
  void arrive_in_order(const Arrival& arrival);
  void collect_one(Element& element);
  void collect_hole(const Arrival& hole);
  void end_of_stream();
  void finish_if_complete();
  void copy_into_slot(Element& element);
  // The sample's mask, boxes and tags into its slot (called from the "batch" stage); throws when they do not
  // fit the batch's layout.
  void place_fields(Element& element);
  PipelineError error_of(const Element& element) const;
  int worker_track();

  // ---- watchdog (watchdog.cpp) ----
  void watch() noexcept;
  void check_stalls();
  // Gives the element up unless it is finishing already; true (and its report counted) when it did.
  bool abandon(Element& element, StallReport& report);

  // ---- configuration ----
  const PipelinePlan plan_;
  const int threads_;
  const std::size_t tokens_;
  const std::size_t prefetch_;
  const std::size_t pool_capacity_;
  const std::vector<std::string> stage_names_;
  const std::size_t read_stage_, batch_stage_, collect_stage_;
  TraceRecorder* const trace_;
  const std::vector<std::string> order_description_;  // ElementOrder::describe, for states
  const bool in_order_;    // batches and samples in source order (deterministic, or one thread)
  const bool watching_;    // a stall_limit is set: stages are timed for the watchdog thread
  const bool abandoning_;  // the watchdog gives stalled elements up (abandon_stalled under skip)
  DeferPolicy* const defer_policy_;  // owned by plan_.options

  // ---- shared, thread-safe ----
  PipelineCounters counters_;
  OutputQueue queue_;
  std::atomic<bool> stop_{false};       // a failure or a cancel: stop choosing and processing elements
  std::atomic<bool> cancelled_{false};  // the iterator is being destroyed
  mutable std::mutex setup_mutex_;      // pool_ is made by the driver and read by the destructor and stats()
  std::shared_ptr<BatchPool> pool_;
  ElementOrder* probe_order_ = nullptr;  // the probe's own order while it runs (the destructor cancels it)
  MemoryBudget decode_budget_;           // Sample::reserve_decode_memory draws from it

  // ---- source stage only ----
  ElementOrder order_;              // restored from the start state by the constructor
  BufferState* current_ = nullptr;  // the buffer being reserved, and how many of its slots are taken
  std::size_t current_used_ = 0;

  // ---- collect (collect_mutex_) ----
  std::mutex collect_mutex_;
  std::vector<Arrival> waiting_;  // finished early, waiting for the ones before them: slot sequence % tokens
  std::uint64_t next_sequence_ = 0;
  // With abandoning: elements (and holes) collected, the number the source stage chose in all (known at
  // the end of the stream), and whether collect finished the batches itself (finish_if_complete).
  std::uint64_t arrived_ = 0, end_sequence_ = static_cast<std::uint64_t>(-1);
  bool finished_early_ = false;
  bool failed_ = false;
  std::optional<BatchAssembler> assembler_;  // made by the driver before the pipeline starts
  bool fields_in_batch_ = false;             // the batches hold masks, boxes or multi-hot rows (idem)
  const BatchAssembler::Sink sink_;

  // ---- elements ----
  // As many as tokens. An element waiting in waiting_ has left parallel_pipeline (its token is free) but
  // not the pipeline, and an abandoned one is held by its stuck stage: the source stage waits for one then.
  std::vector<std::unique_ptr<Element>> elements_;
  std::mutex free_mutex_;
  std::condition_variable element_freed_;
  std::vector<Element*> free_elements_;
  std::uint64_t next_element_sequence_ = 0;  // source stage only

  // ---- tracing ----
  // One track per arena slot: a slot is held by one thread at a time, so each track has one writer at a
  // time. (A per-thread map, tbb::enumerable_thread_specific, would allocate through libtbb.)
  int consumer_track_ = -1;
  std::unique_ptr<std::atomic<int>[]> slot_tracks_;

  // ---- consumer only ----
  bool finished_ = false;
  // Where the order stands after the last item handed out, and what was handed out (for state()).
  std::vector<std::uint64_t> delivered_state_;
  std::uint64_t delivered_items_ = 0, delivered_elements_ = 0, delivered_epoch_ = 0;
  std::vector<ConsumedElements> consumed_;   // from an elastic start: elements this shard must not repeat
  std::vector<std::uint64_t> start_state_;   // the probe starts here too
  std::vector<std::uint64_t> popped_state_;  // the state of the item pop() took, until it is handed out
  std::uint64_t first_sequence_ = 0;         // Batch::sequence of the first batch

  // ---- watchdog ----
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_wake_;
  bool watchdog_stop_ = false;
  int watchdog_track_ = -1;

  // ---- threads: the arena and the driver go last, so that they stop before anything above dies ----
  tbb::task_group_context context_;
  tbb::task_arena arena_;
  std::thread driver_;
  std::thread watchdog_;  // only with a stall_limit
};

}  // namespace conveyor::detail
