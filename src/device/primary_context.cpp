#include "src/device/primary_context.h"

#include <cuda.h>  // the driver's types for the entry points below; the library itself is not linked
#include <cuda_runtime.h>

namespace conveyor::cuda {
namespace {

using DeviceGet = CUresult (*)(CUdevice*, int);
using PrimaryContextState = CUresult (*)(CUdevice, unsigned int*, int*);

struct DriverCalls {
  DeviceGet device_get = nullptr;
  PrimaryContextState primary_context_state = nullptr;
};

// Looked up once per process; both stay null where the driver lacks them (then nothing can be said).
const DriverCalls& driver_calls() {
  static const DriverCalls calls = [] {
    DriverCalls found;
    void* function = nullptr;
    cudaDriverEntryPointQueryResult result{};
    if (cudaGetDriverEntryPointByVersion("cuDeviceGet", &function, 12000, cudaEnableDefault, &result) ==
            cudaSuccess &&
        result == cudaDriverEntryPointSuccess)
      found.device_get = reinterpret_cast<DeviceGet>(function);
    if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &function, 12000, cudaEnableDefault,
                                         &result) == cudaSuccess &&
        result == cudaDriverEntryPointSuccess)
      found.primary_context_state = reinterpret_cast<PrimaryContextState>(function);
    return found;
  }();
  return calls;
}

}  // namespace

std::optional<bool> primary_context_active(int device) noexcept {
  const DriverCalls& calls = driver_calls();
  if (calls.device_get == nullptr || calls.primary_context_state == nullptr) return std::nullopt;
  CUdevice handle{};
  if (calls.device_get(&handle, device) != CUDA_SUCCESS) return std::nullopt;
  unsigned int flags = 0;
  int active = 0;
  if (calls.primary_context_state(handle, &flags, &active) != CUDA_SUCCESS) return std::nullopt;
  return active != 0;
}

void restore_device(int previous) noexcept {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == previous) return;
  // Where the driver cannot say, restore as before.
  if (primary_context_active(previous).value_or(true)) cudaSetDevice(previous);
}

}  // namespace conveyor::cuda
