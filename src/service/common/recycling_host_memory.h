// Host memory that keeps blocks given back, for the pipelines a worker starts split after split: each split's
// pool would otherwise allocate its batch buffers anew (and the kernel fault every page in again). Blocks are
// reused by size, the most recently freed first; at most `keep_bytes` are kept idle, the rest go back.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "conveyor/host_memory.h"

namespace conveyor::service::detail {

class RecyclingHostMemory final : public HostMemoryResource {
 public:
  // Blocks come from `upstream` (ordinary memory when null).
  RecyclingHostMemory(std::shared_ptr<HostMemoryResource> upstream, std::size_t keep_bytes);
  ~RecyclingHostMemory() override;
  RecyclingHostMemory(const RecyclingHostMemory&) = delete;
  RecyclingHostMemory& operator=(const RecyclingHostMemory&) = delete;

  void* allocate(std::size_t bytes) override;
  void deallocate(void* memory, std::size_t bytes) noexcept override;
  bool page_locked() const noexcept override { return upstream_->page_locked(); }

  std::size_t idle_bytes() const;

 private:
  const std::shared_ptr<HostMemoryResource> upstream_;
  const std::size_t keep_bytes_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> idle_;
  std::size_t idle_bytes_ = 0;
};

}  // namespace conveyor::service::detail
