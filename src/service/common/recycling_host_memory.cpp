#include "src/service/common/recycling_host_memory.h"

#include <iterator>

namespace conveyor::service::detail {

RecyclingHostMemory::RecyclingHostMemory(std::shared_ptr<HostMemoryResource> upstream, std::size_t keep_bytes)
    : upstream_(upstream ? std::move(upstream) : pageable_host_memory()), keep_bytes_(keep_bytes) {}

RecyclingHostMemory::~RecyclingHostMemory() {
  for (const auto& [bytes, memory] : idle_) upstream_->deallocate(memory, bytes);
}

void* RecyclingHostMemory::allocate(std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    // Equal sizes keep the order they were freed in: the last of them was freed most recently, and its
    // pages are the likeliest still to be in cache and in the TLB.
    if (const auto [first, end] = idle_.equal_range(bytes); first != end) {
      const auto it = std::prev(end);
      void* memory = it->second;
      idle_.erase(it);
      idle_bytes_ -= bytes;
      return memory;
    }
  }
  return upstream_->allocate(bytes);
}

void RecyclingHostMemory::deallocate(void* memory, std::size_t bytes) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (idle_bytes_ + bytes <= keep_bytes_) {
      try {
        idle_.emplace(bytes, memory);
        idle_bytes_ += bytes;
        return;
      } catch (...) {  // no room to remember it: give it back instead
      }
    }
  }
  upstream_->deallocate(memory, bytes);
}

std::size_t RecyclingHostMemory::idle_bytes() const {
  std::lock_guard lock(mutex_);
  return idle_bytes_;
}

}  // namespace conveyor::service::detail
