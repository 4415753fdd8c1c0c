// The batch memory of a GPU feeder whose CUDA context is still being made: blocks handed out at once from
// ordinary page-aligned memory and page-locked (cudaHostRegister) the moment the context exists; from then
// on every new block comes from the feeder's own page-locked memory (cudaHostAlloc's, or bound to the GPU's
// NUMA node).
//
// Why: a pipeline's source stage takes a batch buffer before its first sample can be decoded into it, and
// page-locking waits for the CUDA context, which takes about 0.1 s on an H200 (issue 41: the hybrid's first
// batch came 0.144 s after CPU-only's, 0.105 s of it the context). With this resource the CPU workers decode
// the first batch while the feeder makes its context on a thread of its own; the feeder copies no block
// before the context is ready, so by the time a copy reads a block it is page-locked (or, where the driver
// refused, counted as a pageable batch: FeederStats::pageable).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "conveyor/host_memory.h"

namespace conveyor::cuda {

class LateLockedHostMemory final : public HostMemoryResource {
 public:
  // `device`: the GPU whose context locks the blocks. The locking and unlocking this resource does itself
  // (on whichever thread gives a block back, or takes one while the context comes) run with it current, so
  // that they never make a context on another GPU; before the context exists nothing here calls CUDA.
  explicit LateLockedHostMemory(int device) : device_(device) {}
  ~LateLockedHostMemory() override;
  LateLockedHostMemory(const LateLockedHostMemory&) = delete;
  LateLockedHostMemory& operator=(const LateLockedHostMemory&) = delete;

  void* allocate(std::size_t bytes) override;
  void deallocate(void* memory, std::size_t bytes) noexcept override;
  // What every block is by the time the feeder copies out of it.
  bool page_locked() const noexcept override { return true; }

  // Called once, on a thread with the CUDA context current: page-locks the blocks made so far; later blocks
  // come from `locked`. Returns what happened to the early blocks (for FeederStats::host_memory).
  std::string context_ready(std::shared_ptr<HostMemoryResource> locked);
  // When the context cannot be made this is never called: every block stays ordinary memory (the feeder
  // reports the failure at its first use, before any copy).

 private:
  struct Early {
    std::size_t bytes;
    bool registered;
  };
  // cudaHostRegister / cudaHostUnregister of a block, with device_ current.
  bool lock_pages(void* memory, std::size_t bytes) const noexcept;
  void unlock_pages(void* memory) const noexcept;

  const int device_;
  mutable std::mutex mutex_;
  std::shared_ptr<HostMemoryResource> locked_;  // null until the context is ready, or when it failed
  std::map<void*, Early> early_;                // blocks made here, not by locked_
};

}  // namespace conveyor::cuda
