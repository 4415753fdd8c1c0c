#include "src/device/late_locked_memory.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <new>

#include "conveyor/error.h"
#include "src/device/cuda_handles.h"

namespace conveyor::cuda {
namespace {

constexpr std::size_t kPage = 4096;  // cudaHostRegister locks whole pages: blocks start on one

std::size_t whole_pages(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

}  // namespace

LateLockedHostMemory::~LateLockedHostMemory() {
  // Every block was given back before (each allocation keeps its resource alive); nothing is left here.
  for (const auto& [memory, block] : early_) {
    if (block.registered) unlock_pages(memory);
    std::free(memory);
  }
}

bool LateLockedHostMemory::lock_pages(void* memory, std::size_t bytes) const noexcept {
  try {
    const DeviceGuard guard(device_);
    if (cudaHostRegister(memory, whole_pages(bytes), cudaHostRegisterPortable) == cudaSuccess) return true;
  } catch (...) {
    // The device could not be made current: the block stays ordinary memory.
  }
  cudaGetLastError();  // its copies count as pageable
  return false;
}

void LateLockedHostMemory::unlock_pages(void* memory) const noexcept {
  try {
    const DeviceGuard guard(device_);
    cudaHostUnregister(memory);  // cannot report from here
  } catch (...) {
    cudaHostUnregister(memory);
  }
}

void* LateLockedHostMemory::allocate(std::size_t bytes) {
  std::shared_ptr<HostMemoryResource> locked;
  {
    std::lock_guard lock(mutex_);
    locked = locked_;
  }
  if (locked) return locked->allocate(bytes);
  void* memory = std::aligned_alloc(kPage, whole_pages(bytes));
  if (memory == nullptr) throw std::bad_alloc();
  std::lock_guard lock(mutex_);
  if (locked_) {
    // The context came ready meanwhile: this block is locked now, like those made before it.
    early_.emplace(memory, Early{bytes, lock_pages(memory, bytes)});
    return memory;
  }
  early_.emplace(memory, Early{bytes, false});
  return memory;
}

void LateLockedHostMemory::deallocate(void* memory, std::size_t bytes) noexcept {
  std::shared_ptr<HostMemoryResource> locked;
  {
    std::lock_guard lock(mutex_);
    const auto early = early_.find(memory);
    if (early != early_.end()) {
      if (early->second.registered) unlock_pages(memory);
      early_.erase(early);
      std::free(memory);
      return;
    }
    locked = locked_;
  }
  if (locked) locked->deallocate(memory, bytes);
}

std::string LateLockedHostMemory::context_ready(std::shared_ptr<HostMemoryResource> locked) {
  std::lock_guard lock(mutex_);
  std::size_t registered = 0, refused = 0;
  for (auto& [memory, block] : early_) {
    // Workers may be writing into the block now: locking its pages leaves their contents as they are.
    block.registered = lock_pages(memory, block.bytes);
    ++(block.registered ? registered : refused);
  }
  locked_ = std::move(locked);
  if (early_.empty()) return "";
  return "; " + std::to_string(registered) + " block(s) made before the CUDA context page-locked when it came" +
         (refused > 0 ? ", " + std::to_string(refused) + " refused by the driver (copied as pageable)" : "");
}

}  // namespace conveyor::cuda
