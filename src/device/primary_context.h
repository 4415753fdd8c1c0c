// Making a device current again without making it a context.
//
// Since CUDA 12, cudaSetDevice makes the device's primary context at once. A guard that restores "the
// previous device" on a thread that never chose one (cudaGetDevice says 0 there) would so make a context on
// GPU 0 in every process that works on another GPU: each rank of a data-parallel job would hold one on
// GPU 0, with its memory, as PyTorch's ranks once did until its guards learned to restore a device only where
// its primary context already exists (c10::cuda::MaybeSetDevice). conveyor's guards do the same.
#pragma once

#include <optional>

namespace conveyor::cuda {

// Whether `device`'s primary context is active in this process, asked of the driver through the runtime's
// entry points (nothing links libcuda); nullopt where the driver cannot say.
std::optional<bool> primary_context_active(int device) noexcept;

// Makes `previous` current on this thread again, unless that would make a context this process does not
// have (then the thread keeps the device it has).
void restore_device(int previous) noexcept;

}  // namespace conveyor::cuda
