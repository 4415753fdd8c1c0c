// Batches as DLPack tensors, so that libtorch, JAX, CuPy or NumPy take them without a copy
// (torch::fromDLPack, numpy.from_dlpack, ...). The DLPack header comes from Debian's libdlpack-dev.
//
// Each tensor keeps the memory it views alive (a host batch's buffer stays out of its pool) until the
// consumer calls its deleter, as DLPack prescribes; the pool's bound counts such buffers as held.
#pragma once

#include <dlpack/dlpack.h>

#include <memory>

#include "conveyor/batch.h"
#include "conveyor/tensor.h"

namespace conveyor {

// A DLPack tensor viewing `view` (shape and strides copied into the managed tensor) that holds `owner`
// until its deleter runs. Host memory is reported as kDLCPU (page-locked or not), device memory as
// kDLCUDA. Throws InvalidArgument for an empty view.
DLManagedTensor* to_dlpack(const TensorView& view, std::shared_ptr<const void> owner);

// A host batch's pixels, (N, H, W, C) uint8, and labels, (N) int64.
DLManagedTensor* to_dlpack_pixels(const Batch& batch);
DLManagedTensor* to_dlpack_labels(const Batch& batch);

}  // namespace conveyor
