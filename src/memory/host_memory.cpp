#include "src/memory/host_memory.h"

#include <new>
#include <utility>

#include "conveyor/error.h"
#ifdef CONVEYOR_HAVE_CUDA
#include <cuda_runtime.h>

#include "src/device/cuda_check.h"
#endif

namespace conveyor::detail {

bool cuda_device_present() noexcept {
#ifdef CONVEYOR_HAVE_CUDA
  int count = 0;
  // Without a driver or a device this returns an error; that simply means "no GPU".
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}

HostAllocation::HostAllocation(std::size_t bytes, bool pinned) : size_(bytes), pinned_(pinned) {
  if (bytes == 0) return;
  if (pinned) {
#ifdef CONVEYOR_HAVE_CUDA
    void* memory = nullptr;
    // Portable: the buffer is page-locked for every CUDA context, whichever device the feeder uses.
    CONVEYOR_CUDA(cudaHostAlloc(&memory, bytes, cudaHostAllocPortable), "batch pool: pinned batch buffer");
    data_ = static_cast<std::byte*>(memory);
#else
    throw InvalidArgument("HostAllocation: pinned memory needs a CUDA build");
#endif
  } else {
    data_ = static_cast<std::byte*>(::operator new (bytes, std::align_val_t{kAlignment}));
  }
}

HostAllocation::~HostAllocation() { reset(); }

HostAllocation::HostAllocation(HostAllocation&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      pinned_(other.pinned_) {}

HostAllocation& HostAllocation::operator=(HostAllocation&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    pinned_ = other.pinned_;
  }
  return *this;
}

void HostAllocation::reset() noexcept {
  if (data_ == nullptr) return;
  if (pinned_) {
#ifdef CONVEYOR_HAVE_CUDA
    cudaFreeHost(data_);  // a destructor cannot report; the pointer came from cudaHostAlloc
#endif
  } else {
    ::operator delete (data_, std::align_val_t{kAlignment});
  }
  data_ = nullptr;
}

}  // namespace conveyor::detail
