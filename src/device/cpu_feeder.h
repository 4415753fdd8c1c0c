// The CPU side of DeviceFeeder: nothing is copied; a DeviceBatch views the batch's own memory, which its
// slot keeps out of the pool while the batch is held, and images normalized on the CPU when asked for.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "src/device/feeder_backend.h"

namespace conveyor::detail {

class CpuFeeder final : public FeederBackend {
 public:
  explicit CpuFeeder(const FeederOptions& options);

  DeviceBatch stage(Batch batch) override;
  void synchronize() override {}
  FeederStats stats() const override;
  void release(std::size_t slot) noexcept override;

 private:
  struct Slot {
    Batch batch;
    std::vector<std::byte> images;  // normalized images, when asked for
  };
  const FeederOptions options_;
  HeldSlots held_;
  std::vector<Slot> slots_;  // a slot's batch is written by stage() and dropped by release(): mutex_
  mutable std::mutex mutex_;
  std::uint64_t batches_ = 0;
};

}  // namespace conveyor::detail
