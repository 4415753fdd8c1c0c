// The memory an nvJPEG handle allocates for itself, from conveyor's pools instead of nvJPEG's default
// cudaMalloc / cudaFree and cudaHostAlloc / cudaFreeHost (nvjpegCreateExV2's stream-ordered allocators).
//
// Why: cudaFree and cudaFreeHost wait for the whole device. When nvJPEG frees and allocates its buffers
// as batches change size, each such call waits for whatever the GPU is doing, and while a training step
// runs that is a whole step per call (bench/results/2026-11-26-*: the batched hardware decode took about a
// step's time per batch under training, against 75-95 us per image without). Device memory comes from the
// feeder's stream-ordered DeviceMemoryPool and goes back in the order of the stream nvJPEG names; freed
// pinned blocks are kept, each with an event recorded on the freeing stream, and handed out again (the
// smallest that fits) once that event has passed, so no call here waits for the device as a whole.
//
// Not copyable or movable: nvJPEG holds the address as its context. It must outlive every handle made
// with it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "src/device/cuda_handles.h"
#include "src/device/device_memory.h"
#include "src/device/nvjpeg/nvjpeg_api.h"

namespace conveyor::cuda {

class NvjpegAllocators {
 public:
  explicit NvjpegAllocators(DeviceMemoryPool& pool) : pool_(pool) {}
  ~NvjpegAllocators();
  NvjpegAllocators(const NvjpegAllocators&) = delete;
  NvjpegAllocators& operator=(const NvjpegAllocators&) = delete;

  // For nvjpegCreateExV2; their context is this object.
  nvjpeg::DevAllocatorV2 device() noexcept;
  nvjpeg::PinnedAllocatorV2 pinned() noexcept;

  // Pinned blocks made so far (cudaHostAlloc calls), and device allocations alive now.
  std::size_t pinned_blocks() const;
  std::size_t device_allocations() const;

 private:
  struct PinnedBlock {
    void* data = nullptr;
    std::size_t bytes = 0;
    Event freed;  // recorded on the stream nvJPEG freed it on
    bool in_use = false;
  };

  static int device_malloc(void* self, void** data, std::size_t bytes, cudaStream_t stream) noexcept;
  static int device_free(void* self, void* data, std::size_t bytes, cudaStream_t stream) noexcept;
  static int pinned_malloc(void* self, void** data, std::size_t bytes, cudaStream_t stream) noexcept;
  static int pinned_free(void* self, void* data, std::size_t bytes, cudaStream_t stream) noexcept;

  DeviceMemoryPool& pool_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, DeviceBuffer> device_;
  std::deque<PinnedBlock> pinned_;  // every block made, in use or free for reuse (a deque: blocks stay put)
};

}  // namespace conveyor::cuda
