// One block of host memory from a HostMemoryResource, given back when it dies.
#pragma once

#include <cstddef>
#include <memory>

#include "conveyor/host_memory.h"

namespace conveyor::detail {

class HostAllocation {
 public:
  static constexpr std::size_t kAlignment = 64;
  // `bytes` rounded up to a multiple of kAlignment: where the next part of a block of several parts starts.
  static constexpr std::size_t round_up(std::size_t bytes) noexcept {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

  HostAllocation() = default;
  // `bytes` bytes from `resource` (kept alive while the allocation lives).
  HostAllocation(std::size_t bytes, std::shared_ptr<HostMemoryResource> resource);
  ~HostAllocation();
  HostAllocation(HostAllocation&& other) noexcept;
  HostAllocation& operator=(HostAllocation&& other) noexcept;
  HostAllocation(const HostAllocation&) = delete;
  HostAllocation& operator=(const HostAllocation&) = delete;

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  void reset() noexcept;
  std::shared_ptr<HostMemoryResource> resource_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace conveyor::detail
