// How many hardware work queues a CUDA context gets, and conveyor's request for more in a job of ranks.
//
// A CUDA context hands work to the GPU through a fixed pool of hardware work queues: the number in
// CUDA_DEVICE_MAX_CONNECTIONS (8 where it is unset, at most 32), which the driver reads when it starts.
// Streams beyond that number share queues, and work on a shared queue waits behind whatever is ahead of it
// there, even work of another stream. A data-parallel rank runs about twenty streams (the step's, NCCL's,
// the copies', nvJPEG's per decoding thread), so an all-reduce kernel that waits for a slower rank holds back
// every kernel queued behind it on its queue, the step's too. On two H200s (2026-11-29) the step stood still
// mid-backward until NCCL kernels ended, and two GPUs made 1.35x one; with 32 queues, 1.80x in the same call
// (bench/results/2026-11-29-h200x2-hardware-queues). Set from resolve_rank_gpu, the variable came too late:
// the driver had started. So conveyor asks for 32 when it is loaded, before main(), in a process that a
// launcher started as one of several ranks, unless the user set a number: theirs always stands (say 8,
// under MPS, where queues are shared among clients).
#pragma once

#include <string>

#include "conveyor/ranks.h"

namespace conveyor::cuda {

inline constexpr int kWantedHardwareQueues = 32;

// Sets CUDA_DEVICE_MAX_CONNECTIONS to kWantedHardwareQueues where it is unset and `environment` describes
// one rank of a job of several (ranks_from_environment); true when it set it. It changes the process's
// environment, so it runs where nothing else reads it: when the library is loaded. A malformed launcher
// variable leaves the environment as it is (the trainer reports that variable later).
bool ask_for_hardware_queues(const Environment& environment);

// "32 hardware work queues per CUDA context (CUDA_DEVICE_MAX_CONNECTIONS)", or the default's line with
// what it costs a rank, for placement reports.
std::string describe_hardware_queues();

}  // namespace conveyor::cuda
