// One way to check every CUDA runtime, cuDNN and cuBLAS call: a failure throws DeviceError naming the
// call, where it was made and what it was for (a layer, the feeder, ...).
#pragma once

#ifdef CONVEYOR_HAVE_CUDA

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

#endif  // CONVEYOR_HAVE_CUDA
