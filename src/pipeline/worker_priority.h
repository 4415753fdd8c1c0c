// The nice value of the threads that work in one pipeline's oneTBB arena (PipelineOptions::worker_nice).
//
// A training loop's own threads (PyTorch's Python thread and its autograd thread launching kernels, a CPU
// trainer's) and the pipeline's threads compete for the same cores. When a launch thread waits for a core
// behind 16 decoding threads, the GPU waits with it. At a higher nice value the pipeline's threads give way
// to the consumer's whenever both want a core, and still take every core the consumer leaves idle.
//
// Linux nice values are per thread. Each thread that enters the arena (its oneTBB workers and the
// pipeline's driver thread, which runs the arena's work too) raises its own on entry, and tries to lower it
// again on exit. An unprivileged process cannot lower a nice value, so a oneTBB worker (the pool is the
// process's) keeps the raised one when it later works for another arena of the process.
#pragma once

#include <tbb/task_arena.h>
#include <tbb/task_scheduler_observer.h>

namespace conveyor::detail {

class WorkerPriority final : public tbb::task_scheduler_observer {
 public:
  // Starts observing `arena` (initialised here if it was not yet). nice: 1-19.
  WorkerPriority(tbb::task_arena& arena, int nice);
  ~WorkerPriority() override;
  WorkerPriority(const WorkerPriority&) = delete;
  WorkerPriority& operator=(const WorkerPriority&) = delete;

  void on_scheduler_entry(bool is_worker) override;
  void on_scheduler_exit(bool is_worker) override;

 private:
  const int nice_;
  const int base_nice_;  // the constructing thread's: what a thread leaving the arena goes back to
};

}  // namespace conveyor::detail
