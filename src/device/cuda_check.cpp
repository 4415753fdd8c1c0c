#include "src/device/cuda_check.h"

#include "conveyor/error.h"

namespace conveyor::cuda {

void throw_cuda_error(cudaError_t status, const char* call, const std::string& context, const char* file,
                      int line) {
  throw DeviceError(std::string(call) + " failed in " + context + " (" + file + ":" + std::to_string(line) +
                    "): " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace conveyor::cuda
