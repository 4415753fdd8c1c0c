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
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
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
  explicit Pipeline(PipelinePlan plan);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  std::optional<Batch> next_batch();
  std::optional<Sample> next_sample();
  PipelineStats stats() const;

 private:
  // ---- driver (pipeline.cpp) ----
  void drive() noexcept;
  std::optional<ImageShape> probe_shape();
  void start_batching(ImageShape shape);
  void run_pipeline();
  OutputQueue::Popped pop();
  void deliver(OutputQueue::Item item);

  // ---- stages (pipeline_stages.cpp) ----
  Element* source_stage(tbb::flow_control& control);
  bool reserve_slot(Element& element, int track, std::chrono::nanoseconds& waited);
  void prepare(Element& element, OrderedElement& order) const;
  void process(Element& element, bool probing) noexcept;
  template <class F>
  bool run_stage(Element& element, std::size_t stage, int track, bool probing, F&& body) noexcept;
  bool wait_for_room(int track, std::chrono::nanoseconds& waited);
  void collect(Element& element);
  PipelineError error_of(const Element& element) const;
  int worker_track();

  // ---- configuration ----
  const PipelinePlan plan_;
  const int threads_;
  const std::size_t tokens_;
  const std::size_t prefetch_;
  const std::size_t pool_capacity_;
  const std::vector<std::string> stage_names_;
  const std::size_t read_stage_, batch_stage_, collect_stage_;
  TraceRecorder* const trace_;

  // ---- shared, thread-safe ----
  PipelineCounters counters_;
  OutputQueue queue_;
  std::atomic<bool> stop_{false};       // a failure or a cancel: stop choosing and processing elements
  std::atomic<bool> cancelled_{false};  // the iterator is being destroyed
  mutable std::mutex setup_mutex_;      // pool_ is made by the driver and read by the destructor and stats()
  std::shared_ptr<BatchPool> pool_;
  ElementOrder* probe_order_ = nullptr;  // the probe's own order while it runs (the destructor cancels it)

  // ---- source stage only ----
  ElementOrder order_;
  BufferState* current_ = nullptr;  // the buffer being reserved, and how many of its slots are taken
  std::size_t current_used_ = 0;

  // ---- collect stage only ----
  bool failed_ = false;
  std::optional<BatchAssembler> assembler_;  // made by the driver before the pipeline starts
  const BatchAssembler::Sink sink_;

  // ---- elements ----
  std::vector<std::unique_ptr<Element>> elements_;
  std::mutex free_mutex_;
  std::vector<Element*> free_elements_;

  // ---- tracing ----
  // One track per arena slot: a slot is held by one thread at a time, so each track has one writer at a
  // time. (A per-thread map, tbb::enumerable_thread_specific, would allocate through libtbb.)
  int consumer_track_ = -1;
  std::unique_ptr<std::atomic<int>[]> slot_tracks_;

  // ---- consumer only ----
  bool finished_ = false;

  // ---- threads: the arena and the driver go last, so that they stop before anything above dies ----
  tbb::task_group_context context_;
  tbb::task_arena arena_;
  std::thread driver_;
};

}  // namespace conveyor::detail
