#include "src/device/nvjpeg/nvjpeg_allocators.h"

#include <limits>

namespace conveyor::cuda {

NvjpegAllocators::~NvjpegAllocators() {
  // The handles are gone (they die first) and their streams were synchronised: nothing reads these now.
  for (PinnedBlock& block : pinned_) cudaFreeHost(block.data);
}

nvjpeg::DevAllocatorV2 NvjpegAllocators::device() noexcept { return {&device_malloc, &device_free, this}; }

nvjpeg::PinnedAllocatorV2 NvjpegAllocators::pinned() noexcept {
  return {&pinned_malloc, &pinned_free, this};
}

std::size_t NvjpegAllocators::pinned_blocks() const {
  std::lock_guard lock(mutex_);
  return pinned_.size();
}

std::size_t NvjpegAllocators::device_allocations() const {
  std::lock_guard lock(mutex_);
  return device_.size();
}

int NvjpegAllocators::device_malloc(void* self, void** data, std::size_t bytes, cudaStream_t stream) noexcept {
  auto& allocators = *static_cast<NvjpegAllocators*>(self);
  try {
    DeviceBuffer buffer = allocators.pool_.allocate(bytes, stream, "nvJPEG's own buffers");
    // On the legacy default stream (nvJPEG's set-up passes none) the allocation is ordered after nothing
    // of ours: make it usable everywhere before it is handed out.
    if (stream == nullptr) CONVEYOR_CUDA(cudaStreamSynchronize(nullptr), "nvJPEG device allocator");
    *data = buffer.data();
    std::lock_guard lock(allocators.mutex_);
    allocators.device_.emplace(buffer.data(), std::move(buffer));
    return 0;
  } catch (...) {
    return 1;  // nvJPEG reports NVJPEG_STATUS_ALLOCATOR_FAILURE
  }
}

int NvjpegAllocators::device_free(void* self, void* data, std::size_t, cudaStream_t stream) noexcept {
  auto& allocators = *static_cast<NvjpegAllocators*>(self);
  DeviceBuffer buffer;
  {
    std::lock_guard lock(allocators.mutex_);
    const auto found = allocators.device_.find(data);
    if (found == allocators.device_.end()) return data == nullptr ? 0 : 1;
    buffer = std::move(found->second);
    allocators.device_.erase(found);
  }
  buffer.reset_on(stream);  // back to the pool once `stream` has passed this point
  return 0;
}

int NvjpegAllocators::pinned_malloc(void* self, void** data, std::size_t bytes, cudaStream_t) noexcept {
  auto& allocators = *static_cast<NvjpegAllocators*>(self);
  try {
    PinnedBlock* best = nullptr;
    {
      std::lock_guard lock(allocators.mutex_);
      std::size_t best_bytes = std::numeric_limits<std::size_t>::max();
      for (PinnedBlock& block : allocators.pinned_)
        if (!block.in_use && block.bytes >= bytes && block.bytes < best_bytes) {
          best = &block;
          best_bytes = block.bytes;
        }
      if (best != nullptr) best->in_use = true;
    }
    if (best != nullptr) {
      best->freed.synchronize();  // the copies queued before it was freed have read it
      *data = best->data;
      return 0;
    }
    void* made = nullptr;
    CONVEYOR_CUDA(cudaHostAlloc(&made, bytes, cudaHostAllocDefault), "nvJPEG pinned allocator");
    std::lock_guard lock(allocators.mutex_);
    allocators.pinned_.push_back({made, bytes, Event(), true});
    *data = made;
    return 0;
  } catch (...) {
    return 1;
  }
}

int NvjpegAllocators::pinned_free(void* self, void* data, std::size_t, cudaStream_t stream) noexcept {
  auto& allocators = *static_cast<NvjpegAllocators*>(self);
  std::lock_guard lock(allocators.mutex_);
  for (PinnedBlock& block : allocators.pinned_)
    if (block.data == data && block.in_use) {
      try {
        block.freed.record(stream);
      } catch (...) {
        return 1;
      }
      block.in_use = false;
      return 0;
    }
  return data == nullptr ? 0 : 1;
}

}  // namespace conveyor::cuda
