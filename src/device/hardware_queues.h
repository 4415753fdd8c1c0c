// How many hardware work queues a CUDA context gets, and conveyor's request for more.
//
// A CUDA context hands work to the GPU through a fixed pool of hardware work queues: the number in
// CUDA_DEVICE_MAX_CONNECTIONS (8 where it is unset, at most 32), read when the context is made. Streams
// beyond that number share queues, and work on a shared queue waits behind whatever is ahead of it there,
// even work of another stream. A data-parallel rank runs about twenty streams (the step's, NCCL's, the
// copies', nvJPEG's per decoding thread). An all-reduce kernel that waits for a slower rank then holds back
// every kernel queued behind it on its queue, the step's too. On two H200s (2026-11-29) the step stood still
// mid-backward until NCCL kernels ended and two GPUs made 1.35x one; with 32 queues, 1.80x in the same call
// (bench/results/2026-11-29-h200x2-hardware-queues). The number can only be chosen before the process makes
// its context, so conveyor asks for 32 where a data-parallel program begins (resolve_rank_gpu and
// DataParallelTrainer), unless the user set it: a value of their own (say 8, under MPS) always stands.
#pragma once

#include <string>

namespace conveyor::cuda {

inline constexpr int kWantedHardwareQueues = 32;

// Sets CUDA_DEVICE_MAX_CONNECTIONS to kWantedHardwareQueues where it is unset; true when it set it. It
// changes the process's environment, so it belongs where a program begins, before other threads read it;
// a context made before the call keeps the queues it has.
bool ask_for_hardware_queues();

// "32 hardware work queues per CUDA context (CUDA_DEVICE_MAX_CONNECTIONS)", or the default's line with
// what it costs, for placement reports.
std::string describe_hardware_queues();

}  // namespace conveyor::cuda
