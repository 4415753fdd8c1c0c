// The CPU side of DeviceFeeder: nothing is copied; a DeviceBatch views the batch's own memory, which its
// slot keeps out of the pool while the batch is held, and images normalized on the CPU when asked for.
//
// FeederOptions::augment runs here too, so that a program gives the same images() on any placement:
// feed() appends the ops to the chain as maps (the pipeline's workers run them; StageMode::augmented), and a
// batch staged by hand gets them applied to a copy of its pixels on the calling thread (its pixels() stay
// as they came, as on a GPU). Deferred samples, which no feeder of a CPU placement asks for, are decoded on
// the calling thread into the batch's own memory.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "src/device/feeder_backend.h"

namespace conveyor::detail {

class CpuFeeder final : public FeederBackend {
 public:
  explicit CpuFeeder(const FeederOptions& options);

  DeviceBatch stage(Batch batch, StageMode mode) override;
  void synchronize() override {}
  FeederStats stats() const override;
  void release(std::size_t slot) noexcept override;
  HeldSlots& slots() noexcept override { return held_; }
  std::shared_ptr<HostMemoryResource> host_memory() override { return pageable_host_memory(); }

 private:
  struct Slot {
    Batch batch;
    std::vector<std::byte> images;        // normalized images, when asked for
    std::vector<std::uint8_t> augmented;  // the augmented copy of the pixels (a batch staged by hand)
  };
  // Decodes `batch`'s deferred samples into its own slots; returns how many (and counts failures).
  std::size_t decode_deferred(const Batch& batch);
  // FeederOptions::pixel_ops, as their SampleOps (a batch staged by hand), in place on the batch's pixels.
  void run_pixel_ops(const Batch& batch) const;
  // Flip and distort, as the SampleOps do, on a copy of the batch's pixels.
  const std::uint8_t* augment(const Batch& batch, Slot& slot) const;

  const FeederOptions options_;
  HeldSlots held_;
  std::vector<Slot> slots_;  // a slot's batch is written by stage() and dropped by release(): mutex_
  mutable std::mutex mutex_;
  std::uint64_t batches_ = 0;
  std::uint64_t cpu_decoded_ = 0;
};

}  // namespace conveyor::detail
