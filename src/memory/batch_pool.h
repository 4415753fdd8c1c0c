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
#include "conveyor/fields/field.h"
#include "conveyor/image.h"
#include "src/core/host_allocation.h"
#include "src/memory/field_columns.h"

namespace conveyor::detail {

// What one buffer holds per sample besides its pixels, label and SampleInfo (conveyor/fields.h).
struct BatchLayout {
  ImageShape image;
  BatchOptions options;  // what the field kinds read: mask type, max boxes, classes
  // One field of each kind the batches carry (its prototype: an empty field, or the first sample's), whose
  // batch_bytes and make_batch lay out every buffer; in the order of the batches' field tensors.
  std::vector<std::shared_ptr<const Field>> fields;
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
  // Where its buffers come from: what memory that grows with a buffer (a BatchSource's field tensors) uses.
  const std::shared_ptr<HostMemoryResource>& memory() const noexcept { return memory_; }

 private:
  struct Slot {
    HostAllocation memory;
    std::unique_ptr<DeferredSlot[]> deferred;  // what ops that defer leave per sample (conveyor/defer.h)
    std::unique_ptr<FieldColumns> fields;      // each field kind's storage, when the layout has fields
    BatchBuffer buffer;
  };
  // Makes one buffer; runs without the lock held (a pinned allocation takes milliseconds).
  std::unique_ptr<Slot> make_slot() const;
  FieldBatchLayout field_layout() const;
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
  std::vector<std::size_t> field_bytes_;  // each field kind's part of the block (rounded up), in layout order

  mutable std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> free_;    // capacity reserved up front: giving back never allocates
  std::size_t allocated_ = 0;  // counts slots being made outside the lock too
  std::size_t waiters_ = 0;
  bool cancelled_ = false;
};

}  // namespace conveyor::detail
