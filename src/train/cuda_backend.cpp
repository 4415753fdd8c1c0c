#include "src/train/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "conveyor/error.h"
#include "src/device/cuda_check.h"
#include "src/device/device_memory.h"
#include "src/device/primary_context.h"
#include "src/observe/library_version_support.h"
#include "src/train/gpu_steps.h"
#include "src/train/layers/cuda_context.h"

namespace conveyor::train {

Backend make_cuda_backend(const BackendOptions& options) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || options.device >= count)
    throw InvalidArgument("trainer: GPU " + std::to_string(options.device) + " requested, " +
                          (status == cudaSuccess
                               ? std::to_string(count) + " visible"
                               : std::string("none usable: ") + cudaGetErrorString(status)));
  std::size_t limit = options.memory_limit_bytes;
  if (!limit && options.memory_fraction > 0)
    limit = cuda::DeviceMemoryPool::limit_from_fraction(options.device, options.memory_fraction);
  auto context = std::make_unique<nn::CudaContext>(options.device, options.dtype, limit, options.deterministic,
                                                   options.urgent_stream);
  auto steps = std::make_unique<GpuSteps>(*context);
  return {std::move(context), std::move(steps)};
}

bool select_cuda_device(int device, int& previous) {
  CONVEYOR_CUDA(cudaGetDevice(&previous), "DeviceScope");
  if (previous == device) return false;
  CONVEYOR_CUDA(cudaSetDevice(device), "DeviceScope");
  return true;
}

void restore_cuda_device(int previous) noexcept { cuda::restore_device(previous); }

void add_cuda_library_versions(LibraryVersions& versions) {
  // cuDNN 9 numbers its versions 10000 * major + 100 * minor + patch.
  const auto cudnn_number = [](std::size_t v) {
    return Version{static_cast<int>(v / 10000), static_cast<int>(v / 100 % 100), static_cast<int>(v % 100)};
  };
  const auto cuda_number = [](int n) { return Version{n / 1000, (n % 1000) / 10, 0}; };
  versions.cudnn = {"cuDNN", cudnn_number(CUDNN_VERSION), cudnn_number(cudnnGetVersion()), {}, {}};
  versions.cudnn_cuda = cuda_number(static_cast<int>(cudnnGetCudartVersion()));
  versions.cudnn.detail = "built for CUDA " + std::to_string(versions.cudnn_cuda.major) + "." +
                          std::to_string(versions.cudnn_cuda.minor);
  detail::locate_library(
      versions.cudnn,
      detail::object_defining("cudnnGetVersion", reinterpret_cast<const void*>(&cudnnGetVersion)));

  int major = 0, minor = 0, patch = 0;
  const bool ok = cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
                  cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
                  cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS;
  versions.cublas = {"cuBLAS",
                     {CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH},
                     ok ? Version{major, minor, patch} : Version{},
                     {},
                     {}};
  detail::locate_library(
      versions.cublas,
      detail::object_defining("cublasGetProperty", reinterpret_cast<const void*>(&cublasGetProperty)));
}

}  // namespace conveyor::train
