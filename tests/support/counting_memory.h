// Host memory that counts what passes through it (ordinary memory underneath), for the tests of what takes
// memory, holds it and gives it back. It says it is page-locked when asked to (`claims_page_locked`), for
// code that treats such memory otherwise.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "conveyor/host_memory.h"

namespace conveyor::testing {

class CountingMemory final : public HostMemoryResource {
 public:
  explicit CountingMemory(bool claims_page_locked = false) : claims_page_locked_(claims_page_locked) {}

  void* allocate(std::size_t bytes) override {
    ++allocations;
    outstanding += bytes;
    return memory_->allocate(bytes);
  }
  void deallocate(void* memory, std::size_t bytes) noexcept override {
    ++deallocations;
    outstanding -= bytes;
    memory_->deallocate(memory, bytes);
  }
  bool page_locked() const noexcept override { return claims_page_locked_; }

  // Atomic: a resource may be called from several threads (a pool's, a cache's own).
  std::atomic<int> allocations{0};
  std::atomic<int> deallocations{0};
  std::atomic<std::size_t> outstanding{0};  // bytes allocated and not given back

 private:
  const bool claims_page_locked_;
  const std::shared_ptr<HostMemoryResource> memory_ = pageable_host_memory();
};

}  // namespace conveyor::testing
