#include "src/device/gpu_query.h"

#include <cstdlib>
#include <string>

#ifdef CONVEYOR_HAVE_CUDA
#include <cuda_runtime.h>

#include "conveyor/error.h"
#include "src/device/cuda_handles.h"
#endif

namespace conveyor {
namespace detail {

#ifdef CONVEYOR_HAVE_CUDA
namespace {

std::string describe_error(cudaError_t status) {
  std::string text = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
    text += " (CUDA_VISIBLE_DEVICES='" + std::string(visible) + "')";
  return text;
}

GpuInfo describe_device(int index, bool with_free_memory) {
  GpuInfo info;
  info.index = index;
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) {
    cudaGetLastError();
    info.name = "(properties unreadable)";
    return info;
  }
  info.name = properties.name;
  info.compute_major = properties.major;
  info.compute_minor = properties.minor;
  info.total_memory = properties.totalGlobalMem;
  info.multiprocessors = properties.multiProcessorCount;
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, index) == cudaSuccess) info.pci_bus_id = bus_id;
  cudaGetLastError();
  if (with_free_memory) {
    // A device in exclusive mode taken by another process cannot be opened: report 0 free, don't fail.
    try {
      cuda::DeviceGuard guard(index);
      std::size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) info.free_memory = free_bytes;
    } catch (const DeviceError&) {
    }
    cudaGetLastError();
  }
  return info;
}

}  // namespace

GpuCensus take_gpu_census(bool with_free_memory) {
  GpuCensus census;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // not sticky, but leave no error behind for the next caller
    census.unavailable_reason = describe_error(status);
    return census;
  }
  if (count == 0) {
    census.unavailable_reason = "the CUDA runtime reports no device";
    return census;
  }
  for (int i = 0; i < count; ++i) census.gpus.push_back(describe_device(i, with_free_memory));
  return census;
}

#else

GpuCensus take_gpu_census(bool) { return {{}, "built without CUDA"}; }

#endif

}  // namespace detail

std::vector<int> gpus_in_use() {
  std::vector<int> in_use;
#ifdef CONVEYOR_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return in_use;
  }
  for (int i = 0; i < count; ++i)
    if (cuda::primary_context_active(i).value_or(false)) in_use.push_back(i);
#endif
  return in_use;
}

std::vector<GpuInfo> list_gpus() { return detail::take_gpu_census(true).gpus; }

std::string gpu_unavailable_reason() { return detail::take_gpu_census(false).unavailable_reason; }

}  // namespace conveyor
