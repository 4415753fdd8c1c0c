// One way to check every CUDA runtime call (src/train/layers/cudnn_check.h adds cuDNN and cuBLAS): a
// failure throws DeviceError naming the call, where it was made and what it was for (the feeder, ...).
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace conveyor::cuda {

// Throws DeviceError("<call> failed in <context> (<file>:<line>): <error name>: <message>").
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const std::string& context,
                                   const char* file, int line);

inline void check(cudaError_t status, const char* call, const std::string& context, const char* file,
                  int line) {
  if (status != cudaSuccess) throw_cuda_error(status, call, context, file, line);
}

}  // namespace conveyor::cuda

// CONVEYOR_CUDA(cudaMemcpyAsync(...), "feeder") — context is a string naming the component or layer.
#define CONVEYOR_CUDA(call, context) ::conveyor::cuda::check((call), #call, (context), __FILE__, __LINE__)
