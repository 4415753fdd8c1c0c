// A bounded pool of batch buffers (pixels and labels of one batch in one allocation). Buffers are made on
// first need, at most max_buffers of them, and lent out as shared_ptr<BatchBuffer> whose deleter gives
// them back: memory is bounded by the pool's configuration, whatever the dataset size. The deleter keeps
// the pool alive, so a Batch may outlive the iterator that made it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/image.h"
#include "src/memory/host_memory.h"

namespace conveyor::detail {

// What one buffer holds per sample besides its pixels, label and SampleInfo (conveyor/fields.h).
struct BatchLayout {
  ImageShape image;
  MaskShape mask;               // empty: no masks
  bool boxes = false;           // each slot's BoxList, packed when the batch is complete
  std::size_t max_boxes = 0;    // boxes per sample in the packed tensors; 0: each batch's most
  std::size_t num_classes = 0;  // multi-hot width; 0: none
};

class BatchPool : public std::enable_shared_from_this<BatchPool> {
  struct Key {
    explicit Key() = default;
  };

 public:
  // The bytes one buffer of `capacity` samples of `shape` asks its HostMemoryResource for: what a
  // resource that keeps blocks ready (the device feeder's, at warm-up) reserves.
  static std::size_t buffer_bytes(std::size_t capacity, ImageShape shape) noexcept;
  // Buffers of `capacity` samples of `shape`, from `memory` (pageable memory when null).
  static std::shared_ptr<BatchPool> create(std::size_t max_buffers, std::size_t capacity, ImageShape shape,
                                           std::shared_ptr<HostMemoryResource> memory = nullptr);
  // The same with other fields per sample.
  static std::shared_ptr<BatchPool> create_with_layout(std::size_t max_buffers, std::size_t capacity,
                                                       const BatchLayout& layout,
                                                       std::shared_ptr<HostMemoryResource> memory = nullptr);
  BatchPool(Key, std::size_t max_buffers, std::size_t capacity, const BatchLayout& layout,
            std::shared_ptr<HostMemoryResource> memory);
  BatchPool(const BatchPool&) = delete;
  BatchPool& operator=(const BatchPool&) = delete;

  // A free buffer, allocating a new one while fewer than max_buffers exist; otherwise waits until one
  // comes back, calling `on_wait` (without the pool's lock) once the wait is visible to waiting().
  // Returns nullptr once cancel() has been called.
  std::shared_ptr<BatchBuffer> acquire(const std::function<void()>& on_wait = {});
  // Same without waiting: nullptr when none can be had now.
  std::shared_ptr<BatchBuffer> try_acquire();
  // Wakes every waiting acquire() and makes later ones return nullptr. Lent buffers still come back.
  void cancel();

  // True when acquire() would have to wait.
  bool exhausted() const;
  // True while an acquire() is waiting and no buffer is free: only a returned buffer can end the wait.
  bool waiting() const;
  std::size_t max_buffers() const noexcept { return max_buffers_; }
  std::size_t allocated() const;
  std::size_t in_use() const;
  bool pinned() const noexcept { return pinned_; }

 private:
  // Packed boxes in memory of the pool's resource, grown to the largest batch seen (doubling).
  class GrowingBoxStorage final : public BoxStorage {
   public:
    explicit GrowingBoxStorage(std::shared_ptr<HostMemoryResource> memory) : memory_(std::move(memory)) {}
    PackedBoxes reserve(std::size_t samples, std::size_t max_boxes) override;

   private:
    std::shared_ptr<HostMemoryResource> memory_;
    HostAllocation allocation_;
  };
  struct Slot {
    HostAllocation memory;
    std::unique_ptr<DeferredSlot[]> deferred;  // what ops that defer leave per sample (conveyor/defer.h)
    std::unique_ptr<BoxList[]> boxes;          // per sample, when the layout has boxes
    std::unique_ptr<GrowingBoxStorage> box_storage;
    BatchBuffer buffer;
  };
  // Makes one buffer; runs without the lock held (a pinned allocation takes milliseconds).
  std::unique_ptr<Slot> make_slot() const;
  std::shared_ptr<BatchBuffer> take(std::unique_lock<std::mutex>& lock, bool wait,
                                    const std::function<void()>& on_wait);
  std::shared_ptr<BatchBuffer> lend(Slot* slot);
  void give_back(Slot* slot) noexcept;

  const std::size_t max_buffers_;
  const std::size_t capacity_;
  const ImageShape shape_;
  const BatchLayout layout_;
  const std::shared_ptr<HostMemoryResource> memory_;
  const bool pinned_;
  const std::size_t pixel_bytes_;
  const std::size_t label_bytes_;
  const std::size_t info_bytes_;
  const std::size_t mask_bytes_;
  const std::size_t multi_hot_bytes_;

  mutable std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> free_;    // capacity reserved up front: giving back never allocates
  std::size_t allocated_ = 0;  // counts slots being made outside the lock too
  std::size_t waiters_ = 0;
  bool cancelled_ = false;
};

}  // namespace conveyor::detail
