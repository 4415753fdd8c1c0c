// How a DeviceFeeder hands batches over, chosen once when the feeder is made: on a GPU (gpu_feeder.h) or
// on the CPU (cpu_feeder.h). Every DeviceBatch holds its ring slot through a SlotHold that shares the
// backend, so the ring's memory outlives the feeder object while a batch is still held.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/cuda/device_batch.h"
#include "conveyor/cuda/device_feeder.h"

namespace conveyor::detail {

// Which ring slots are held by the consumer; what both backends share about choosing a slot.
class HeldSlots {
 public:
  explicit HeldSlots(std::size_t count) : held_(count, false) {}

  // The least recently chosen slot that no one holds, now marked held; nullopt when all are held.
  std::optional<std::size_t> take() {
    std::lock_guard lock(mutex_);
    for (std::size_t k = 0; k < held_.size(); ++k) {
      const std::size_t slot = (next_ + k) % held_.size();
      if (!held_[slot]) {
        held_[slot] = true;
        next_ = slot + 1;
        return slot;
      }
    }
    return std::nullopt;
  }
  void give_back(std::size_t slot) noexcept {
    {
      std::lock_guard lock(mutex_);
      held_[slot] = false;
    }
    freed_.notify_all();
  }
  // Waits up to `timeout` for a slot that no one holds (without taking it): true when there is one.
  bool wait_for_free(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return freed_.wait_for(lock, timeout,
                           [&] { return std::find(held_.begin(), held_.end(), false) != held_.end(); });
  }
  std::size_t held() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const bool h : held_) n += h ? 1 : 0;
    return n;
  }
  std::size_t size() const noexcept { return held_.size(); }

 private:
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<bool> held_;
  std::size_t next_ = 0;
};

class FeederBackend : public std::enable_shared_from_this<FeederBackend> {
 public:
  virtual ~FeederBackend() = default;

  struct StageMode {
    // Also make the batch ready for the consumer (its stream waits for it). Without, hand_over() must be
    // called before the consumer gets it: the feeder's staging thread prepares batches ahead, and the
    // consumer stream must not wait for a batch before the work queued for the previous one.
    bool hand_over = true;
    // The pipeline already ran FeederOptions::augment as maps (feed() on the CPU).
    bool augmented = false;
  };
  virtual DeviceBatch stage(Batch batch, StageMode mode) = 0;
  virtual void hand_over(const DeviceBatch&) {}
  virtual void synchronize() = 0;
  virtual FeederStats stats() const = 0;
  // DeviceFeeder::warmup; nothing to do by default (the CPU).
  virtual double warmup(const BatchedDataset&) { return 0; }
  // Where the pipeline's batch buffers should live: memory this backend copies fastest.
  virtual std::shared_ptr<HostMemoryResource> host_memory() = 0;
  // The last reference to the hold of `slot` is gone (any thread): the slot may be reused once its
  // consumer has passed this point.
  virtual void release(std::size_t slot) noexcept = 0;
  // The ring's slots: the staging thread waits on them for one the consumer gave back.
  virtual HeldSlots& slots() noexcept = 0;
};

// One claim on one ring slot, shared by a DeviceBatch and every view made of it.
class SlotHold {
 public:
  SlotHold(std::shared_ptr<FeederBackend> backend, std::size_t slot) noexcept
      : backend_(std::move(backend)), slot_(slot) {}
  ~SlotHold() { backend_->release(slot_); }
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;

  FeederBackend& backend() const noexcept { return *backend_; }
  std::size_t slot() const noexcept { return slot_; }

 private:
  std::shared_ptr<FeederBackend> backend_;
  std::size_t slot_;
};

// The one error for a consumer that holds every slot: the feeder never overwrites a held batch.
[[noreturn]] void throw_all_slots_held(std::size_t depth);

// Builds DeviceBatch handles and reaches the backend behind a feeder or a batch.
struct DeviceBatchAccess {
  using Parts = DeviceBatchParts;
  static DeviceBatch make(std::shared_ptr<SlotHold> hold, const Parts& parts);
  // FeederOptions::augment flips images only: a batch with a field that would have to flip with them is
  // refused (place_pixel_ops leaves such a chain's flip in the pipeline), so that no batch differs by
  // where it was made.
  static void check_augment(const FeederOptions& options, const Batch& batch);
  static const SlotHold* hold(const DeviceBatch& batch) noexcept { return batch.hold_.get(); }
  static FeederBackend& backend(const DeviceFeeder& feeder) noexcept { return *feeder.backend_; }
};

}  // namespace conveyor::detail
