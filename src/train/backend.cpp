// The training wing's one choice of backend (see backend.h): the only file outside the CUDA-only twins
// that depends on whether conveyor was built with CUDA.
#include "src/train/backend.h"

#include <string>

#include "conveyor/error.h"
#include "src/train/cpu_steps.h"
#include "src/train/layers/cpu_context.h"

#ifdef CONVEYOR_HAVE_CUDA
#include "src/train/cuda_backend.h"
#endif

namespace conveyor::train {

Backend make_backend(const BackendOptions& options) {
  if (options.device < 0) return {std::make_unique<nn::CpuContext>(), std::make_unique<CpuSteps>()};
#ifdef CONVEYOR_HAVE_CUDA
  return make_cuda_backend(options);
#else
  throw InvalidArgument("trainer: GPU " + std::to_string(options.device) +
                        " requested, but conveyor was built without CUDA");
#endif
}

DeviceScope::DeviceScope([[maybe_unused]] int device) {
#ifdef CONVEYOR_HAVE_CUDA
  if (device >= 0) changed_ = select_cuda_device(device, previous_);
#endif
}

DeviceScope::~DeviceScope() {
#ifdef CONVEYOR_HAVE_CUDA
  if (changed_) restore_cuda_device(previous_);
#endif
}

void add_backend_library_versions([[maybe_unused]] LibraryVersions& versions) {
#ifdef CONVEYOR_HAVE_CUDA
  add_cuda_library_versions(versions);
#endif
}

}  // namespace conveyor::train
