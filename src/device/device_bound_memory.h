// Host memory whose allocations and frees run with one GPU current.
//
// cudaHostAlloc and cudaHostRegister work through the calling thread's current device, and a thread that
// never chose one has device 0: a pipeline worker that grows a feeder's page-locked blocks would make a
// CUDA context on GPU 0 in a rank that trains on GPU 1. Seen on two H200s (2026-11-29,
// bench/results/2026-11-29-h200x2-hardware-queues/7-prepared): in the two rounds where rank 1 made a block on
// demand, that block took 1.8 s and 1.0 s, rank 1 ended holding contexts on GPUs 0 and 1, idled 29 % and
// 17 %, and the pair scaled 1.38x and 1.62x; in the round without, 1.94x. (Rank 0's block, on its own
// device 0, took 0.03 s.)
#pragma once

#include <memory>

#include "conveyor/host_memory.h"

namespace conveyor::cuda {

// `memory`, whose allocate and deallocate run with `device` current on the calling thread (a device
// guard: the thread gets its device back where it had a context on it).
std::shared_ptr<HostMemoryResource> with_device(std::shared_ptr<HostMemoryResource> memory, int device);

}  // namespace conveyor::cuda
