#include "src/memory/batch_pool.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "conveyor/error.h"

namespace conveyor::detail {
namespace {

std::size_t round_up(std::size_t bytes) {
  constexpr std::size_t a = HostAllocation::kAlignment;
  return (bytes + a - 1) / a * a;
}

}  // namespace

std::shared_ptr<BatchPool> BatchPool::create(std::size_t max_buffers, std::size_t capacity, ImageShape shape,
                                             std::shared_ptr<HostMemoryResource> memory) {
  BatchLayout layout;
  layout.image = shape;
  return create_with_layout(max_buffers, capacity, layout, std::move(memory));
}

std::shared_ptr<BatchPool> BatchPool::create_with_layout(std::size_t max_buffers, std::size_t capacity,
                                                         const BatchLayout& layout,
                                                         std::shared_ptr<HostMemoryResource> memory) {
  if (max_buffers == 0 || capacity == 0 || layout.image.empty())
    throw InvalidArgument("BatchPool: needs at least one buffer, a capacity and a non-empty sample shape");
  if (!memory) memory = pageable_host_memory();
  return std::make_shared<BatchPool>(Key{}, max_buffers, capacity, layout, std::move(memory));
}

BatchPool::BatchPool(Key, std::size_t max_buffers, std::size_t capacity, const BatchLayout& layout,
                     std::shared_ptr<HostMemoryResource> memory)
    : max_buffers_(max_buffers),
      capacity_(capacity),
      shape_(layout.image),
      layout_(layout),
      memory_(std::move(memory)),
      pinned_(memory_->page_locked()),
      pixel_bytes_(round_up(capacity * layout.image.bytes())),
      label_bytes_(round_up(capacity * sizeof(std::int64_t))),
      info_bytes_(round_up(capacity * sizeof(SampleInfo))),
      mask_bytes_(round_up(capacity * layout.mask.bytes())),
      multi_hot_bytes_(round_up(capacity * layout.num_classes)) {
  slots_.reserve(max_buffers);
  free_.reserve(max_buffers);
}

std::size_t BatchPool::buffer_bytes(std::size_t capacity, ImageShape shape) noexcept {
  return round_up(capacity * shape.bytes()) + round_up(capacity * sizeof(std::int64_t)) +
         round_up(capacity * sizeof(SampleInfo));
}

std::unique_ptr<BatchPool::Slot> BatchPool::make_slot() const {
  auto slot = std::make_unique<Slot>();
  slot->memory =
      HostAllocation(pixel_bytes_ + label_bytes_ + info_bytes_ + mask_bytes_ + multi_hot_bytes_, memory_);
  std::byte* const base = slot->memory.data();
  slot->buffer.pixels = reinterpret_cast<std::uint8_t*>(base);
  slot->buffer.labels = reinterpret_cast<std::int64_t*>(base + pixel_bytes_);
  // The memory is raw bytes: start the lifetime of the SampleInfo objects before anyone assigns them.
  auto* const infos = reinterpret_cast<SampleInfo*>(base + pixel_bytes_ + label_bytes_);
  std::uninitialized_value_construct_n(infos, capacity_);
  slot->buffer.samples = infos;
  slot->buffer.capacity = capacity_;
  slot->buffer.shape = shape_;
  slot->buffer.pinned = pinned_;
  // Empty until an op defers a sample: then it holds that sample's bytes, whose capacity stays for reuse.
  slot->deferred = std::make_unique<DeferredSlot[]>(capacity_);
  slot->buffer.deferred = slot->deferred.get();
  std::byte* const fields = base + pixel_bytes_ + label_bytes_ + info_bytes_;
  if (!layout_.mask.empty()) {
    slot->buffer.masks = reinterpret_cast<std::uint8_t*>(fields);
    slot->buffer.mask_shape = layout_.mask;
  }
  if (layout_.num_classes > 0) {
    slot->buffer.multi_hot = reinterpret_cast<std::uint8_t*>(fields + mask_bytes_);
    slot->buffer.num_classes = layout_.num_classes;
  }
  if (layout_.boxes) {
    slot->boxes = std::make_unique<BoxList[]>(capacity_);
    slot->box_storage = std::make_unique<GrowingBoxStorage>(memory_);
    slot->buffer.boxes = slot->boxes.get();
    slot->buffer.fixed_max_boxes = layout_.max_boxes;
    slot->buffer.box_storage = slot->box_storage.get();
    // Room for the fixed size, or a first guess, so that a warm pool does not grow.
    slot->box_storage->reserve(capacity_, layout_.max_boxes > 0 ? layout_.max_boxes : 8);
  }
  return slot;
}

PackedBoxes BatchPool::GrowingBoxStorage::reserve(std::size_t samples, std::size_t max_boxes) {
  // Boxes, classes, counts, crowd flags, each 64-byte aligned; at least one box a sample so that no
  // pointer is null.
  const std::size_t boxes = std::max<std::size_t>(samples * max_boxes, 1);
  const std::size_t box_bytes = round_up(boxes * sizeof(Box));
  const std::size_t class_bytes = round_up(boxes * sizeof(std::int64_t));
  const std::size_t count_bytes = round_up(std::max<std::size_t>(samples, 1) * sizeof(std::int64_t));
  const std::size_t bytes = box_bytes + class_bytes + count_bytes + round_up(boxes);
  if (allocation_.size() < bytes)
    allocation_ = HostAllocation(std::max(bytes, 2 * allocation_.size()), memory_);
  std::byte* const base = allocation_.data();
  PackedBoxes packed;
  packed.boxes = reinterpret_cast<Box*>(base);
  packed.classes = reinterpret_cast<std::int64_t*>(base + box_bytes);
  packed.counts = reinterpret_cast<std::int64_t*>(base + box_bytes + class_bytes);
  packed.crowd = reinterpret_cast<std::uint8_t*>(base + box_bytes + class_bytes + count_bytes);
  packed.max_boxes = max_boxes;
  return packed;
}

std::shared_ptr<BatchBuffer> BatchPool::acquire(const std::function<void()>& on_wait) {
  std::unique_lock lock(mutex_);
  return take(lock, true, on_wait);
}

std::shared_ptr<BatchBuffer> BatchPool::try_acquire() {
  std::unique_lock lock(mutex_);
  return take(lock, false, {});
}

std::shared_ptr<BatchBuffer> BatchPool::take(std::unique_lock<std::mutex>& lock, bool wait,
                                             const std::function<void()>& on_wait) {
  for (;;) {
    if (cancelled_) return nullptr;
    if (!free_.empty()) {
      Slot* slot = free_.back();
      free_.pop_back();
      lock.unlock();
      return lend(slot);
    }
    if (allocated_ < max_buffers_) {
      ++allocated_;
      lock.unlock();
      std::unique_ptr<Slot> slot;
      try {
        slot = make_slot();
      } catch (...) {
        lock.lock();
        --allocated_;
        throw;
      }
      Slot* raw = slot.get();
      lock.lock();
      slots_.push_back(std::move(slot));
      lock.unlock();
      return lend(raw);
    }
    if (!wait) return nullptr;
    ++waiters_;
    if (on_wait) {
      lock.unlock();
      on_wait();
      lock.lock();
    }
    // A buffer given back while the lock was released is seen here, so no wake-up is lost.
    if (free_.empty() && !cancelled_) returned_.wait(lock);
    --waiters_;
  }
}

std::shared_ptr<BatchBuffer> BatchPool::lend(Slot* slot) {
  struct GiveBack {
    std::shared_ptr<BatchPool> pool;
    Slot* slot;
    void operator()(BatchBuffer*) const noexcept { pool->give_back(slot); }
  };
  // Should the control block fail to allocate, shared_ptr calls the deleter: the buffer comes back.
  return std::shared_ptr<BatchBuffer>(&slot->buffer, GiveBack{shared_from_this(), slot});
}

void BatchPool::give_back(Slot* slot) noexcept {
  {
    std::lock_guard lock(mutex_);
    free_.push_back(slot);
  }
  returned_.notify_one();
}

void BatchPool::cancel() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  returned_.notify_all();
}

bool BatchPool::exhausted() const {
  std::lock_guard lock(mutex_);
  return free_.empty() && allocated_ == max_buffers_;
}

bool BatchPool::waiting() const {
  std::lock_guard lock(mutex_);
  return waiters_ > 0 && free_.empty();
}

std::size_t BatchPool::allocated() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

std::size_t BatchPool::in_use() const {
  std::lock_guard lock(mutex_);
  return allocated_ - free_.size();
}

}  // namespace conveyor::detail
