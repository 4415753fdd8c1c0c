#include "src/device/pinned_block_cache.h"

#include <chrono>
#include <utility>

namespace conveyor::cuda {

PinnedBlockCache::PinnedBlockCache(std::shared_ptr<HostMemoryResource> memory, std::size_t make_ahead)
    : memory_(std::move(memory)), make_ahead_(make_ahead) {}

PinnedBlockCache::~PinnedBlockCache() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (maker_.joinable()) maker_.join();
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
      if (ahead_of_.contains(bytes)) wake_.notify_one();  // one fewer kept: the thread makes its next
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
  if (make_ahead_ > 0 && !stopping_) {
    // Warm-up made fewer of this size than the run holds at once: from now on some wait ready.
    try {
      ahead_of_.emplace(bytes, true);
      if (!maker_.joinable()) maker_ = std::thread([this] { make_ahead_loop(); });
      wake_.notify_one();
    } catch (...) {
      ahead_of_.clear();  // no thread (or memory) to be had: every block on demand, as without make-ahead
    }
  }
  return block;
}

std::size_t PinnedBlockCache::size_short_locked() const {
  for (const auto& [bytes, on] : ahead_of_) {
    if (!on) continue;
    const auto found = free_.find(bytes);
    if (found == free_.end() || found->second.size() < make_ahead_) return bytes;
  }
  return 0;
}

void PinnedBlockCache::make_ahead_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    std::size_t bytes = 0;
    wake_.wait(lock, [&] { return stopping_ || (!paused_ && (bytes = size_short_locked()) != 0); });
    if (stopping_) return;
    ++made_of_[bytes];
    lock.unlock();
    void* block = nullptr;
    try {
      block = memory_->allocate(bytes);  // outside the lock: the pipeline takes kept blocks meanwhile
    } catch (...) {
      // Out of page-locked memory, say: stop making this size ahead; the pipeline's own allocate() reports
      // the failure where it can be handled.
      lock.lock();
      --made_of_[bytes];
      ahead_of_[bytes] = false;
      continue;
    }
    lock.lock();
    try {
      free_[bytes].push_back(block);
    } catch (...) {
      memory_->deallocate(block, bytes);  // no room to keep it: as if it had not been made
      --made_of_[bytes];
      ahead_of_[bytes] = false;
      continue;
    }
    ++made_;
    ++made_ahead_;
  }
}

void PinnedBlockCache::pause_making_ahead() {
  std::lock_guard lock(mutex_);
  paused_ = true;
}

void PinnedBlockCache::resume_making_ahead() {
  {
    std::lock_guard lock(mutex_);
    if (!paused_) return;
    paused_ = false;
  }
  wake_.notify_all();
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

std::size_t PinnedBlockCache::made_ahead() const {
  std::lock_guard lock(mutex_);
  return made_ahead_;
}

}  // namespace conveyor::cuda
