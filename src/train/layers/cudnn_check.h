// cuDNN and cuBLAS overloads of the one checking facility in cuda_check.h: a failed call throws
// DeviceError naming the call, the layer or component it was made for, and cuDNN's own explanation.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

#include "src/device/cuda_check.h"

namespace conveyor::cuda {

[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const std::string& context,
                                    const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const std::string& context,
                                     const char* file, int line);

inline void check(cudnnStatus_t status, const char* call, const std::string& context, const char* file,
                  int line) {
  if (status != CUDNN_STATUS_SUCCESS) throw_cudnn_error(status, call, context, file, line);
}
inline void check(cublasStatus_t status, const char* call, const std::string& context, const char* file,
                  int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, context, file, line);
}

// True when cuDNN declined a configuration (CUDNN_STATUS_NOT_SUPPORTED and its sub-codes) rather than
// failing: the caller may fall back to another path.
inline bool is_not_supported(cudnnStatus_t status) {
  return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED;
}

}  // namespace conveyor::cuda

// CONVEYOR_CUDNN(cudnnConvolutionForward(...), "layer1.0.conv1")
#define CONVEYOR_CUDNN(call, context) ::conveyor::cuda::check((call), #call, (context), __FILE__, __LINE__)
// CONVEYOR_CUBLAS(cublasGemmEx(...), "fc")
#define CONVEYOR_CUBLAS(call, context) ::conveyor::cuda::check((call), #call, (context), __FILE__, __LINE__)
