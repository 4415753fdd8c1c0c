// The GPU augmentation stage: per batch, draws every sample's flip and colour parameters on the CPU from its
// seed, uploads them through a small pinned buffer, and runs fused_augment on the caller's stream.
//
// The pinned and device parameter buffers form a ring of `depth` slots so that drawing the next batch's
// parameters never overwrites a buffer an earlier batch's copy or kernel may still read: a slot is reused
// only after the event recorded behind its last kernel has passed (the host waits for it, which it almost
// never has to when depth >= 2).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "conveyor/ops/normalize.h"
#include "src/core/host_allocation.h"
#include "src/device/augment/augment_params.h"
#include "src/device/augment/fused_augment.h"
#include "src/device/cuda_handles.h"
#include "src/device/device_memory.h"

namespace conveyor::cuda {

struct GpuAugmentOptions {
  AugmentDraws draws;              // which random augmentations run, with their options and Rng streams
  ops::NormalizeParams normalize;  // the output: mean/std per channel, element type, layout
  int depth = 3;                   // parameter buffers in flight
  int blocks_per_image = 0;        // FeederOptions::kernel_blocks_per_image
};

class GpuAugmenter {
 public:
  // Works on `device`, with device memory from `pool` (which must outlive the augmenter).
  GpuAugmenter(int device, DeviceMemoryPool& pool, GpuAugmentOptions options);
  ~GpuAugmenter();
  GpuAugmenter(const GpuAugmenter&) = delete;
  GpuAugmenter& operator=(const GpuAugmenter&) = delete;

  // Enqueues the augmentation of `in` (seeds[i]: the sample seed of image i) into `out` on `stream`;
  // `out` is ready when `stream` reaches this point. Throws InvalidArgument on mismatched sizes.
  void run(const DeviceImages& in, std::span<const std::uint64_t> seeds, void* out, cudaStream_t stream);

  const GpuAugmentOptions& options() const noexcept { return options_; }

 private:
  struct Slot {
    detail::HostAllocation pinned;  // SampleAugment[capacity], drawn here, copied from here
    DeviceBuffer params;            // SampleAugment[capacity] on the device
    DeviceBuffer sums;              // 3 x capacity channel sums
    std::size_t capacity = 0;
    Event done;  // after the last kernel that reads this slot
    bool used = false;
  };

  void ensure_capacity(Slot& slot, std::size_t count);

  int device_;
  DeviceMemoryPool* pool_;
  std::shared_ptr<HostMemoryResource> pinned_;  // the parameter buffers' page-locked memory
  GpuAugmentOptions options_;
  std::optional<Stream> own_;  // allocations and frees happen here, never on a caller's stream
  std::vector<Slot> slots_;    // never resized after construction; destroyed before own_
  std::uint64_t next_ = 0;
};

}  // namespace conveyor::cuda
