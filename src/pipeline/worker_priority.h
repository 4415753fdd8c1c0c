// The nice value of the threads that work for a pipeline (PipelineOptions::worker_nice).
//
// A training loop's own threads (PyTorch's Python thread and its autograd thread launching kernels, a CPU
// trainer's) and the pipeline's threads compete for the same cores. When a launch thread waits for a core
// behind 16 decoding threads, the GPU waits with it. At a higher nice value the pipeline's threads give way
// to the consumer's whenever both want a core, and still take every core the consumer leaves idle.
//
// Linux nice values are per thread. Every thread that runs a stage of the pipeline (its oneTBB workers and
// its driver thread) sets its own before the stage. An unprivileged process cannot lower a nice value, so a
// oneTBB worker (the pool is the process's) keeps the raised one when it later works for another arena.
// (A oneTBB task_scheduler_observer would tell entries into the arena instead, but its proxy outlived the
// arena under LeakSanitizer.)
#pragma once

namespace conveyor::detail {

// Raises the calling thread's nice value to `nice` when it is lower (best effort: a thread that may not
// take the value keeps its own). A thread-local remembers the last value asked for, so that the system calls
// run once per thread and value, not once per stage.
void raise_this_threads_nice(int nice) noexcept;

}  // namespace conveyor::detail
