// Versions the build was compiled against (macros) next to the ones actually loaded (asked at run time),
// and where each loaded library lives: a mismatch between the two is the classic cause of
// "works on my machine".
// jpeglib.h needs size_t and FILE declared before it.
#include <cstddef>
#include <cstdio>
// clang-format off
#include <jpeglib.h>
// clang-format on

#include <oneapi/tbb/version.h>
#include <turbojpeg.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <opencv2/core/utility.hpp>
#include <opencv2/core/version.hpp>
#include <string>

#ifdef CONVEYOR_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#endif

#include "conveyor/device.h"
#include "src/device/gpu_query.h"
#include "src/device/loaded_object.h"

namespace conveyor {
namespace {

// "2021.8", "4.6.0", "2.1.5 (build ...)" -> {2021, 8, 0}, ...; missing parts are 0.
Version parse_version(std::string_view text) {
  int parts[3] = {0, 0, 0};
  const char* at = text.data();
  const char* end = text.data() + text.size();
  for (int& part : parts) {
    const auto [next, error] = std::from_chars(at, end, part);
    if (error != std::errc()) break;
    at = next;
    if (at == end || *at != '.') break;
    ++at;
  }
  return {parts[0], parts[1], parts[2]};
}

void locate(LibraryVersion& library, const std::optional<detail::LoadedObject>& object) {
  if (!object) return;
  library.path = object->path;
  if (object->real_path != object->path) library.path += " -> " + object->real_path;
  if (object->is_program)
    library.detail += (library.detail.empty() ? "" : ", ") + std::string("linked statically");
}

LibraryVersion libjpeg_turbo_version() {
  constexpr int number = LIBJPEG_TURBO_VERSION_NUMBER;  // 1000000 * major + 1000 * minor + patch
  LibraryVersion library{
      "libjpeg-turbo", {number / 1000000, number / 1000 % 1000, number % 1000}, {}, {}, {}};
  // TurboJPEG 2.x exports no version function, but every build embeds the text
  // "libjpeg-turbo version X.Y.Z (build YYYYMMDD)": read it from the library actually mapped.
  const auto object =
      detail::object_defining("tjInitDecompress", reinterpret_cast<const void*>(&tjInitDecompress));
  if (object) {
    const std::string prefix = "libjpeg-turbo version ";
    if (auto text = detail::find_text_in_object(object->address, prefix, ')')) {
      library.loaded = parse_version(std::string_view(*text).substr(prefix.size()));
      if (const auto build = text->find("(build "); build != std::string::npos)
        library.detail = text->substr(build + 1);
    }
  }
  locate(library, object);
  return library;
}

LibraryVersion tbb_version() {
  LibraryVersion library{"oneTBB",
                         {TBB_VERSION_MAJOR, TBB_VERSION_MINOR, TBB_VERSION_PATCH},
                         parse_version(TBB_runtime_version()),
                         {},
                         {}};
  library.detail = "interface " + std::to_string(TBB_runtime_interface_version());
  locate(library,
         detail::object_defining("TBB_runtime_version", reinterpret_cast<const void*>(&TBB_runtime_version)));
  return library;
}

LibraryVersion opencv_version() {
  LibraryVersion library{"OpenCV",
                         {CV_VERSION_MAJOR, CV_VERSION_MINOR, CV_VERSION_REVISION},
                         parse_version(cv::getVersionString()),
                         {},
                         {}};
  // OpenCV's functions are C++ (mangled names): find the library by file name instead of by symbol.
  if (auto object = detail::object_named("libopencv_core"))
    locate(library, object);
  else
    library.detail = "linked statically";
  return library;
}

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
    locate(versions.cuda_driver, detail::object_named("libcuda.so"));
  }

  versions.cuda_runtime = {
      "CUDA runtime", from_cuda_number(CUDART_VERSION), from_cuda_number(runtime), {}, {}};
  locate(versions.cuda_runtime,
         detail::object_defining("cudaRuntimeGetVersion",
                                 reinterpret_cast<const void*>(&cudaRuntimeGetVersion)));

  // cuDNN 9 numbers its versions 10000 * major + 100 * minor + patch.
  const auto cudnn_number = [](std::size_t v) {
    return Version{static_cast<int>(v / 10000), static_cast<int>(v / 100 % 100), static_cast<int>(v % 100)};
  };
  versions.cudnn = {"cuDNN", cudnn_number(CUDNN_VERSION), cudnn_number(cudnnGetVersion()), {}, {}};
  versions.cudnn_cuda = from_cuda_number(static_cast<int>(cudnnGetCudartVersion()));
  versions.cudnn.detail = "built for CUDA " + std::to_string(versions.cudnn_cuda.major) + "." +
                          std::to_string(versions.cudnn_cuda.minor);
  locate(versions.cudnn,
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
  locate(versions.cublas,
         detail::object_defining("cublasGetProperty", reinterpret_cast<const void*>(&cublasGetProperty)));
}
#endif

}  // namespace

std::string Version::to_string() const {
  if (!known()) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::vector<LibraryVersion> LibraryVersions::libraries() const {
  std::vector<LibraryVersion> list;
  if (built_with_cuda) list = {cuda_driver, cuda_runtime, cudnn, cublas};
  list.insert(list.end(), {libjpeg_turbo, tbb, opencv});
  return list;
}

LibraryVersions library_versions() {
  LibraryVersions versions;
#ifdef CONVEYOR_HAVE_CUDA
  read_cuda_versions(versions);
#endif
  versions.libjpeg_turbo = libjpeg_turbo_version();
  versions.tbb = tbb_version();
  versions.opencv = opencv_version();
  versions.nvidia_kernel_module = first_line("/proc/driver/nvidia/version");
  const detail::GpuCensus census = detail::take_gpu_census(false);
  versions.visible_gpus = static_cast<int>(census.gpus.size());
  versions.gpu_error = census.unavailable_reason;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) versions.cuda_visible_devices = visible;
  return versions;
}

}  // namespace conveyor
