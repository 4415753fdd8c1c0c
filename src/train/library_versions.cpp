// The training wing's libraries, cuDNN and cuBLAS, added to the device wing's version report.
#include <string>

#ifdef CONVEYOR_HAVE_CUDA
#include <cublas_v2.h>
#include <cudnn.h>
#endif

#include "conveyor/train/library_versions.h"
#include "src/observe/library_version_support.h"

namespace conveyor::train {

LibraryVersions library_versions() {
  LibraryVersions versions = conveyor::library_versions();
#ifdef CONVEYOR_HAVE_CUDA
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
#endif
  return versions;
}

}  // namespace conveyor::train
