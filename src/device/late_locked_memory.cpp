#include "src/device/late_locked_memory.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <new>

#include "conveyor/error.h"

namespace conveyor::cuda {
namespace {

constexpr std::size_t kPage = 4096;  // cudaHostRegister locks whole pages: blocks start on one

std::size_t whole_pages(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

}  // namespace

LateLockedHostMemory::~LateLockedHostMemory() {
  // Every block was given back before (each allocation keeps its resource alive); nothing is left here.
  for (const auto& [memory, block] : early_) {
    if (block.registered) cudaHostUnregister(memory);
    std::free(memory);
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
    const cudaError_t status = cudaHostRegister(memory, whole_pages(bytes), cudaHostRegisterPortable);
    if (status != cudaSuccess) cudaGetLastError();  // stays ordinary memory: its copies count as pageable
    early_.emplace(memory, Early{bytes, status == cudaSuccess});
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
      if (early->second.registered) cudaHostUnregister(memory);  // cannot report from here
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
    const cudaError_t status = cudaHostRegister(memory, whole_pages(block.bytes), cudaHostRegisterPortable);
    block.registered = status == cudaSuccess;
    if (block.registered) {
      ++registered;
    } else {
      cudaGetLastError();
      ++refused;
    }
  }
  locked_ = std::move(locked);
  if (early_.empty()) return "";
  return "; " + std::to_string(registered) + " block(s) made before the CUDA context page-locked when it came" +
         (refused > 0 ? ", " + std::to_string(refused) + " refused by the driver (copied as pageable)" : "");
}

}  // namespace conveyor::cuda
