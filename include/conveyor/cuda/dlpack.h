// DeviceBatches as DLPack tensors (conveyor/dlpack.h has the host forms): kDLCUDA tensors on a GPU,
// kDLCPU ones on the CPU. Each tensor holds the batch (its ring slot stays out of reuse) until the
// consumer calls its deleter; a consumer reading on another CUDA stream than the feeder's consumer stream
// calls conveyor::cuda::read_on first (the Python module does, from __dlpack__(stream=...)).
#pragma once

#include <dlpack/dlpack.h>

#include "conveyor/cuda/device_batch.h"

namespace conveyor {

DLManagedTensor* to_dlpack_pixels(const DeviceBatch& batch);  // (N, H, W, C) uint8
DLManagedTensor* to_dlpack_labels(const DeviceBatch& batch);  // (N) int64
// The normalized images; throws InvalidArgument when the feeder made none (FeederOptions::normalize).
DLManagedTensor* to_dlpack_images(const DeviceBatch& batch);

}  // namespace conveyor
