// Where a pipeline's batch buffers live. The data wing makes ordinary (pageable) memory; page-locked
// memory, which a GPU copies asynchronously, comes from the device wing (conveyor/cuda/pinned_memory.h)
// through this interface, so that the pipeline itself needs no CUDA.
#pragma once

#include <cstddef>
#include <memory>

namespace conveyor {

class HostMemoryResource {
 public:
  virtual ~HostMemoryResource() = default;
  // At least `bytes` bytes, aligned to 64 bytes or more. Throws when the memory cannot be had.
  virtual void* allocate(std::size_t bytes) = 0;
  // Gives back what allocate(bytes) returned.
  virtual void deallocate(void* memory, std::size_t bytes) noexcept = 0;
  // True when the memory is page-locked: a GPU copies it asynchronously, without a bounce buffer.
  virtual bool page_locked() const noexcept = 0;
};

// Ordinary memory, 64-byte aligned; what a pipeline uses unless PipelineOptions::host_memory says otherwise.
std::shared_ptr<HostMemoryResource> pageable_host_memory();

}  // namespace conveyor
