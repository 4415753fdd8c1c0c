#include "src/device/hardware_queues.h"

#include <cstdlib>
#include <string>

#include "conveyor/error.h"

namespace conveyor::cuda {
namespace {

constexpr const char* kVariable = "CUDA_DEVICE_MAX_CONNECTIONS";
constexpr int kCudaDefault = 8;

// Runs when the program is loaded: before main(), and so before any CUDA call (the first CUDA call of most
// programs comes before their first call into conveyor). Only this object's static initialiser writes the
// environment. The linker keeps this file wherever the data-parallel trainer is linked, which reports the
// queues (describe_hardware_queues); the Python module, which has no data-parallel trainer, does not set it.
[[maybe_unused]] const bool asked_when_loaded = ask_for_hardware_queues(process_environment());

}  // namespace

bool ask_for_hardware_queues(const Environment& environment) {
  if (environment(kVariable)) return false;  // the user's number stands
  try {
    if (ranks_from_environment(environment).world_size < 2) return false;
  } catch (const Error&) {
    return false;  // a malformed launcher variable: reported where the ranks are read for the job
  }
  return ::setenv(kVariable, std::to_string(kWantedHardwareQueues).c_str(), 0) == 0;
}

std::string describe_hardware_queues() {
  const char* value = std::getenv(kVariable);
  const std::string variable = kVariable;
  if (value == nullptr)
    return std::to_string(kCudaDefault) + " hardware work queues per CUDA context (" + variable +
           " unset: CUDA's default; streams beyond 8 share queues, so a collective waiting for another rank "
           "holds back the step's kernels queued behind it: set " +
           variable + "=32 in the launcher's environment)";
  return std::string(value) + " hardware work queues per CUDA context (" + variable + ")";
}

}  // namespace conveyor::cuda
