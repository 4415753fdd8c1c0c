#include "conveyor/cuda/pinned_memory.h"

#include "conveyor/error.h"
#ifdef CONVEYOR_HAVE_CUDA
#include <cuda_runtime.h>

#include "src/device/cuda_check.h"
#endif

namespace conveyor {
namespace {

#ifdef CONVEYOR_HAVE_CUDA
class PinnedHostMemory final : public HostMemoryResource {
 public:
  void* allocate(std::size_t bytes) override {
    void* memory = nullptr;
    // Portable: the buffer is page-locked for every CUDA context, whichever device the feeder uses.
    // cudaHostAlloc returns page-aligned memory, more than the 64 bytes the interface promises.
    CONVEYOR_CUDA(cudaHostAlloc(&memory, bytes, cudaHostAllocPortable), "batch pool: pinned batch buffer");
    return memory;
  }
  void deallocate(void* memory, std::size_t) noexcept override {
    cudaFreeHost(memory);  // cannot report from here; the pointer came from cudaHostAlloc
  }
  bool page_locked() const noexcept override { return true; }
};
#endif

}  // namespace

std::shared_ptr<HostMemoryResource> pinned_host_memory() {
#ifdef CONVEYOR_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    throw DeviceError("pinned_host_memory: no GPU is visible (" + gpu_unavailable_reason() + ")");
  }
  return std::make_shared<PinnedHostMemory>();
#else
  throw DeviceError("pinned_host_memory: this build of conveyor has no CUDA support");
#endif
}

std::shared_ptr<HostMemoryResource> host_memory_for(const Placement& placement) {
  return placement.gpu ? pinned_host_memory() : pageable_host_memory();
}

}  // namespace conveyor
