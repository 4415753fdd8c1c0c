#include "src/device/hardware_queues.h"

#include <cstdlib>
#include <string>

namespace conveyor::cuda {
namespace {

constexpr const char* kVariable = "CUDA_DEVICE_MAX_CONNECTIONS";
constexpr int kCudaDefault = 8;

}  // namespace

bool ask_for_hardware_queues() {
  if (std::getenv(kVariable) != nullptr) return false;  // the user's choice stands
  return ::setenv(kVariable, std::to_string(kWantedHardwareQueues).c_str(), 0) == 0;
}

std::string describe_hardware_queues() {
  const char* value = std::getenv(kVariable);
  if (value == nullptr)
    return std::to_string(kCudaDefault) + " hardware work queues per CUDA context (" + kVariable +
           " unset: CUDA's default; streams beyond 8 share queues, and a collective waiting for another rank "
           "holds back the work queued behind it)";
  return std::string(value) + " hardware work queues per CUDA context (" + kVariable +
         ", for contexts made after it was set)";
}

}  // namespace conveyor::cuda
