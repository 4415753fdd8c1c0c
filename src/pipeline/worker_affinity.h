// The CPUs the threads that work for a pipeline run on (PipelineOptions::cpus).
//
// Two pipelines on one host (two ranks, or one process feeding two GPUs) that each take every core compete
// for all of them, and the scheduler moves their threads between cores. Given their own CPUs, each keeps
// its caches and the other's threads off them. As with the nice value (worker_priority.h), every thread
// that runs a stage sets its own affinity before the stage, rather than a oneTBB observer at arena entry
// (whose proxy outlived the arena under LeakSanitizer); a thread-local remembers the set last applied, so the
// system call runs when a thread moves to a pipeline with another set, not once per stage.
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace conveyor::detail {

// Throws InvalidArgument (naming `what`) for a negative CPU, one past the kernel's CPU set size, or a CPU
// given twice.
void check_cpus(std::span<const int> cpus, std::string_view what);

// Runs the calling thread on `cpus` from now on (best effort: a set the kernel refuses, say CPUs outside the
// process's cgroup, leaves the thread where it was); an empty set gives a thread pinned earlier the CPUs it
// had before. Cheap when nothing changes: one thread-local comparison.
void pin_this_thread(std::span<const int> cpus) noexcept;

// The CPUs the calling thread may run on now, ascending.
std::vector<int> this_threads_cpus();

// The `part`-th of `parts` contiguous, near-equal shares of `cpus` (in their order): what each of `parts`
// pipelines of one process, or each of `parts` ranks of one host, gets. With fewer CPUs than parts, part p
// gets CPU p mod n alone.
std::vector<int> share_of_cpus(std::span<const int> cpus, int part, int parts);

}  // namespace conveyor::detail
