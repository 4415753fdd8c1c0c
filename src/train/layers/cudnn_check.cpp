#include "src/train/layers/cudnn_check.h"

#include "conveyor/error.h"

namespace conveyor::cuda {

void throw_cudnn_error(cudnnStatus_t status, const char* call, const std::string& context, const char* file,
                       int line) {
  // cuDNN 9 keeps a per-thread explanation of the last failure, often naming the offending parameter.
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string message = std::string(call) + " failed in " + context + " (" + file + ":" +
                        std::to_string(line) + "): " + cudnnGetErrorString(status) + " (" +
                        std::to_string(static_cast<int>(status)) + ")";
  if (detail[0]) message += ": " + std::string(detail);
  throw DeviceError(message);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const std::string& context, const char* file,
                        int line) {
  throw DeviceError(std::string(call) + " failed in " + context + " (" + file + ":" + std::to_string(line) +
                    "): " + cublasGetStatusName(status) + ": " + cublasGetStatusString(status));
}

}  // namespace conveyor::cuda
