// The CUDA side of backend.h's choice (CUDA-only): the GPU backend, device selection and cuDNN's and
// cuBLAS's versions.
#pragma once

#include "conveyor/cuda/device.h"
#include "src/train/backend.h"

namespace conveyor::train {

// A CudaContext and GpuSteps on options.device, after checking that the device is there.
Backend make_cuda_backend(const BackendOptions& options);
// Makes `device` current; `previous` receives the device that was. True when they differ.
bool select_cuda_device(int device, int& previous);
void restore_cuda_device(int previous) noexcept;
void add_cuda_library_versions(LibraryVersions& versions);

}  // namespace conveyor::train
