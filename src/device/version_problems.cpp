// Turns LibraryVersions into sentences a user can act on. A pure function of its input, so every rule is
// tested with made-up versions on any machine.
#include <string>
#include <vector>

#include "conveyor/cuda/device.h"

namespace conveyor {
namespace {

std::string v(const Version& version) { return version.to_string(); }

// Major and minor only: CUDA and its libraries talk about "CUDA 13.0", not "13.0.0".
std::string mm(const Version& version) {
  return std::to_string(version.major) + "." + std::to_string(version.minor);
}

// A library loaded at run time that is older than, or of another major version than, the one compiled
// against. OpenCV breaks its ABI between minor versions, so it asks for an exact major.minor match.
void check_loaded(const LibraryVersion& library, bool minor_must_match, std::vector<std::string>& problems) {
  if (!library.compiled.known()) return;
  if (!library.loaded.known()) {
    problems.push_back("could not tell which " + library.name + " is loaded (built against " +
                       v(library.compiled) + ")");
    return;
  }
  const bool other_major = library.loaded.major != library.compiled.major;
  const bool other_minor = minor_must_match && library.loaded.minor != library.compiled.minor;
  if (other_major || other_minor) {
    problems.push_back(library.name + " " + v(library.loaded) + " is loaded but conveyor was built against " +
                       v(library.compiled) +
                       (other_major ? " (another major version)" : " (another minor version)") +
                       ": rebuild, or put the matching library first on the library path" +
                       (library.path.empty() ? "" : " (loaded from " + library.path + ")"));
  } else if (library.loaded < library.compiled) {
    problems.push_back(library.name + " " + v(library.loaded) + " is loaded, older than the " +
                       v(library.compiled) +
                       " conveyor was built against: functions it relies on may be missing or buggy");
  }
}

void check_cuda(const LibraryVersions& versions, std::vector<std::string>& problems) {
  const Version driver = versions.cuda_driver.loaded;
  const Version runtime = versions.cuda_runtime.loaded;
  if (!driver.known()) {
    problems.push_back(
        versions.nvidia_kernel_module.empty()
            ? "no NVIDIA driver: libcuda.so.1 is not installed and no NVIDIA kernel module is loaded, "
              "so no GPU can be used (install the NVIDIA driver, or run with --device cpu)"
            : "the NVIDIA kernel module is loaded (" + versions.nvidia_kernel_module +
                  ") but its user-space library libcuda.so.1 is missing or not on the library path");
  } else if (runtime.known() && driver.major < runtime.major) {
    problems.push_back(
        "the NVIDIA driver supports CUDA up to " + mm(driver) + " but conveyor uses the CUDA " + mm(runtime) +
        " runtime: update the driver to one made for CUDA " + std::to_string(runtime.major) + " or newer");
  } else if (runtime.known() && driver < runtime) {
    problems.push_back(
        "the NVIDIA driver supports CUDA up to " + mm(driver) + ", older than the CUDA " + mm(runtime) +
        " runtime: it runs through CUDA's minor-version compatibility, but code needing the newer "
        "driver (PTX JIT of newer kernels) will fail; update the driver when you can");
  }
  check_loaded(versions.cuda_runtime, false, problems);

  // cuDNN and cuBLAS are in the report only when the training wing made it.
  const bool has_cudnn = !versions.cudnn.name.empty(), has_cublas = !versions.cublas.name.empty();
  if (has_cudnn && !versions.cudnn.loaded.known()) {
    problems.push_back("cuDNN could not be loaded (built against " + v(versions.cudnn.compiled) + ")");
  } else if (has_cudnn) {
    check_loaded(versions.cudnn, false, problems);
    if (versions.cudnn_cuda.known() && runtime.known() && versions.cudnn_cuda.major != runtime.major)
      problems.push_back("cuDNN " + v(versions.cudnn.loaded) + " was built for CUDA " +
                         mm(versions.cudnn_cuda) + " but the CUDA runtime is " + mm(runtime) +
                         ": install the cuDNN made for CUDA " + std::to_string(runtime.major));
  }
  if (has_cublas) check_loaded(versions.cublas, false, problems);
  if (has_cublas && versions.cublas.loaded.known() && runtime.known() &&
      versions.cublas.loaded.major != runtime.major)
    problems.push_back("cuBLAS " + v(versions.cublas.loaded) + " belongs to CUDA " +
                       std::to_string(versions.cublas.loaded.major) + " but the CUDA runtime is " +
                       mm(runtime));

  // With no driver the cause is already said above; otherwise say why no device shows up.
  if (driver.known() && versions.visible_gpus == 0) {
    if (versions.cuda_visible_devices)
      problems.push_back("CUDA_VISIBLE_DEVICES='" + *versions.cuda_visible_devices +
                         "' hides every GPU: unset it or list valid device indices or UUIDs (" +
                         versions.gpu_error + ")");
    else
      problems.push_back("no CUDA device is visible: " + versions.gpu_error);
  }
}

}  // namespace

std::vector<std::string> version_problems(const LibraryVersions& versions) {
  std::vector<std::string> problems;
  if (versions.built_with_cuda)
    check_cuda(versions, problems);
  else
    problems.push_back("this build has no GPU support (configured without CUDA): everything runs on the CPU");
  check_loaded(versions.libjpeg_turbo, false, problems);
  check_loaded(versions.tbb, false, problems);
  check_loaded(versions.opencv, true, problems);
  return problems;
}

}  // namespace conveyor
