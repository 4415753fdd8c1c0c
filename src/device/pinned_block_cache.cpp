#include "src/device/pinned_block_cache.h"

#include <chrono>
#include <utility>

namespace conveyor::cuda {

PinnedBlockCache::PinnedBlockCache(std::shared_ptr<HostMemoryResource> memory) : memory_(std::move(memory)) {}

PinnedBlockCache::~PinnedBlockCache() {
  // Every allocation holds the cache, so nothing is lent out any more.
  for (auto& [bytes, blocks] : free_)
    for (void* block : blocks) memory_->deallocate(block, bytes);
}

void* PinnedBlockCache::allocate(std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    auto found = free_.find(bytes);
    if (found != free_.end() && !found->second.empty()) {
      void* block = found->second.back();
      found->second.pop_back();
      return block;
    }
  }
  // Outside the lock: page-locking takes milliseconds, and other sizes need not wait for it.
  const auto start = std::chrono::steady_clock::now();
  void* block = memory_->allocate(bytes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard lock(mutex_);
  ++made_;
  ++made_of_[bytes];
  ++made_on_demand_;
  on_demand_seconds_ += seconds;
  return block;
}

void PinnedBlockCache::deallocate(void* memory, std::size_t bytes) noexcept {
  try {
    std::lock_guard lock(mutex_);
    free_[bytes].push_back(memory);
  } catch (...) {
    memory_->deallocate(memory, bytes);  // out of memory for the list: give the block back instead
  }
}

void PinnedBlockCache::reserve(std::size_t bytes, std::size_t count) {
  while (kept(bytes) < count) {
    void* block = memory_->allocate(bytes);
    {
      std::lock_guard lock(mutex_);
      ++made_;
      ++made_of_[bytes];
    }
    deallocate(block, bytes);
  }
}

void PinnedBlockCache::fill(std::size_t bytes, std::size_t count) {
  for (;;) {
    {
      // Counted before it is made. allocate() counts after, so a block the pipeline makes at the same
      // moment may be one more than `count`: a serial source stage makes one at a time.
      std::lock_guard lock(mutex_);
      if (made_of_[bytes] >= count) return;
      ++made_of_[bytes];
    }
    void* block = nullptr;
    try {
      block = memory_->allocate(bytes);
    } catch (...) {
      std::lock_guard lock(mutex_);
      --made_of_[bytes];
      throw;
    }
    {
      std::lock_guard lock(mutex_);
      ++made_;
    }
    deallocate(block, bytes);
  }
}

std::size_t PinnedBlockCache::kept(std::size_t bytes) const {
  std::lock_guard lock(mutex_);
  const auto found = free_.find(bytes);
  return found == free_.end() ? 0 : found->second.size();
}

std::size_t PinnedBlockCache::made() const {
  std::lock_guard lock(mutex_);
  return made_;
}

std::size_t PinnedBlockCache::made_on_demand() const {
  std::lock_guard lock(mutex_);
  return made_on_demand_;
}

double PinnedBlockCache::on_demand_seconds() const {
  std::lock_guard lock(mutex_);
  return on_demand_seconds_;
}

}  // namespace conveyor::cuda
