// How many hardware work queues a CUDA context gets, and conveyor's request for more in a job of ranks.
//
// A CUDA context hands work to the GPU through a fixed pool of hardware work queues: the number in
// CUDA_DEVICE_MAX_CONNECTIONS (8 where it is unset, at most 32), read when CUDA starts in the process.
// Streams beyond that number share queues, and work on a shared queue waits behind whatever is ahead of it
// there, even work of another stream. A data-parallel rank runs about twenty streams (the step's, NCCL's,
// the copies', nvJPEG's per decoding thread), and an all-reduce kernel that waits for the other rank is
// the longest thing ahead of anyone: two H200s made 1.37x one GPU with 8 queues and 1.84x with 32, in the
// same call (bench/results/2026-11-29-h200x2-hardware-queues). Set by resolve_rank_gpu, the variable
// changed nothing in feed_vs_prefetch (1.35x against 1.38x with 8 in the same call): CUDA had been called
// before it. So conveyor asks for 32 when it is loaded, before main() and so before any CUDA call, in a
// process that a launcher started as one of several ranks, unless the user set a number: theirs always
// stands (say 8 under MPS, where clients share the queues). A lone process keeps CUDA's default: one H200
// fed its step 0.99x as fast with 32 queues.
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
