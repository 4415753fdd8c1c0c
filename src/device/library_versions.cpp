// The device wing's version report: the CUDA driver and runtime next to the data wing's libraries, the
// GPUs the runtime can see and why none, when none. cuDNN and cuBLAS belong to the training wing, which
// adds them (conveyor::train::library_versions).
#include <cstdlib>
#include <fstream>
#include <string>

#ifdef CONVEYOR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "conveyor/cuda/device.h"
#include "src/device/gpu_query.h"
#include "src/observe/library_version_support.h"

namespace conveyor {
namespace {

std::string first_line(const char* path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

#ifdef CONVEYOR_HAVE_CUDA
// CUDA encodes versions as 1000 * major + 10 * minor.
Version from_cuda_number(int number) { return {number / 1000, (number % 1000) / 10, 0}; }

void read_cuda_versions(LibraryVersions& versions) {
  versions.built_with_cuda = true;
  int driver = 0, runtime = 0;
  // Without a driver, cudaDriverGetVersion succeeds and reports 0.
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  cudaGetLastError();
  versions.cuda_driver = {"CUDA driver", {}, from_cuda_number(driver), {}, {}};
  if (driver != 0) {
    versions.cuda_driver.detail = "the newest CUDA version this driver supports";
    detail::locate_library(versions.cuda_driver, detail::object_named("libcuda.so"));
  }
  versions.cuda_runtime = {
      "CUDA runtime", from_cuda_number(CUDART_VERSION), from_cuda_number(runtime), {}, {}};
  detail::locate_library(versions.cuda_runtime,
                         detail::object_defining("cudaRuntimeGetVersion",
                                                 reinterpret_cast<const void*>(&cudaRuntimeGetVersion)));
}
#endif

}  // namespace

std::vector<LibraryVersion> LibraryVersions::libraries() const {
  std::vector<LibraryVersion> list;
  if (built_with_cuda) {
    list = {cuda_driver, cuda_runtime};
    if (!cudnn.name.empty()) list.push_back(cudnn);
    if (!cublas.name.empty()) list.push_back(cublas);
  }
  list.insert(list.end(), {libjpeg_turbo, tbb, opencv});
  return list;
}

LibraryVersions library_versions() {
  LibraryVersions versions;
#ifdef CONVEYOR_HAVE_CUDA
  read_cuda_versions(versions);
#endif
  // data_library_versions() lists libjpeg-turbo, oneTBB and OpenCV in that order.
  const std::vector<LibraryVersion> data = data_library_versions();
  versions.libjpeg_turbo = data.at(0);
  versions.tbb = data.at(1);
  versions.opencv = data.at(2);
  versions.nvidia_kernel_module = first_line("/proc/driver/nvidia/version");
  const detail::GpuCensus census = detail::take_gpu_census(false);
  versions.visible_gpus = static_cast<int>(census.gpus.size());
  versions.gpu_error = census.unavailable_reason;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) versions.cuda_visible_devices = visible;
  return versions;
}

}  // namespace conveyor
