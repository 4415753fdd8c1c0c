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
      info_bytes_(round_up(capacity * sizeof(SampleInfo))) {
  for (const std::shared_ptr<const Field>& field : layout_.fields)
    field_bytes_.push_back(round_up(field->batch_bytes(field_layout())));
  slots_.reserve(max_buffers);
  free_.reserve(max_buffers);
}

FieldBatchLayout BatchPool::field_layout() const {
  return {.capacity = capacity_, .image = shape_, .options = layout_.options, .memory = memory_};
}

std::size_t BatchPool::buffer_bytes(std::size_t capacity, ImageShape shape) noexcept {
  return round_up(capacity * shape.bytes()) + round_up(capacity * sizeof(std::int64_t)) +
         round_up(capacity * sizeof(SampleInfo));
}

std::unique_ptr<BatchPool::Slot> BatchPool::make_slot() const {
  auto slot = std::make_unique<Slot>();
  std::size_t fields_total = 0;
  for (const std::size_t bytes : field_bytes_) fields_total += bytes;
  slot->memory = HostAllocation(pixel_bytes_ + label_bytes_ + info_bytes_ + fields_total, memory_);
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
  if (!layout_.fields.empty()) {
    // Each kind's fixed part (masks, multi-hot rows) in the same block as the pixels, page-locked with them.
    std::vector<std::unique_ptr<FieldBatch>> columns;
    std::byte* part = base + pixel_bytes_ + label_bytes_ + info_bytes_;
    const FieldBatchLayout layout = field_layout();
    for (std::size_t k = 0; k < layout_.fields.size(); ++k) {
      columns.push_back(layout_.fields[k]->make_batch(layout, {part, field_bytes_[k]}));
      part += field_bytes_[k];
    }
    slot->fields = std::make_unique<FieldColumns>(std::move(columns));
    slot->buffer.fields = slot->fields.get();
    slot->buffer.field_tensors.reserve(4 * layout_.fields.size());  // a warm pool does not allocate for them
  }
  return slot;
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
