// Page-locked scratch that grows but gives nothing back while it is in use. Freeing page-locked memory
// (cudaFreeHost) waits for the device like cudaFree does: for every training step queued ahead and, when one
// process drives several GPUs, for an NCCL all-reduce that waits in turn for another replica's thread (the
// hang of 2026-11-27: docs/architecture.md, "What never waits for the whole device"). So a buffer that must
// grow keeps its old block until it is destroyed; sized at warm-up, it never grows at all.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "conveyor/host_memory.h"
#include "src/core/host_allocation.h"

namespace conveyor::cuda {

class RetainedHostBuffer {
 public:
  explicit RetainedHostBuffer(std::shared_ptr<HostMemoryResource> memory) : memory_(std::move(memory)) {}

  // At least `bytes` bytes; a new block (twice the old size, or `bytes` if more) when the current one is
  // smaller. What was written to the old block is not carried over.
  std::byte* reserve(std::size_t bytes) {
    if (current_.size() < bytes) {
      const std::size_t grown = std::max(bytes, 2 * current_.size());
      detail::HostAllocation next(grown, memory_);
      if (current_.size() > 0) retired_.push_back(std::move(current_));
      current_ = std::move(next);
    }
    return current_.data();
  }
  std::byte* data() const noexcept { return current_.data(); }
  std::size_t size() const noexcept { return current_.size(); }
  // Blocks made since construction, the current one included: 1 once warm-up has sized it.
  std::size_t blocks() const noexcept { return retired_.size() + (current_.size() > 0 ? 1 : 0); }

 private:
  std::shared_ptr<HostMemoryResource> memory_;
  detail::HostAllocation current_;
  std::vector<detail::HostAllocation> retired_;  // freed with this object, never while it is in use
};

}  // namespace conveyor::cuda
