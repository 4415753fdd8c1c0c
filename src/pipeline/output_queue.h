// The queue between the pipeline and the consumer: ready batches (or samples), and errors at their
// position. The pipeline never blocks on a push (its bounds guarantee room, and the ring grows rather
// than fail); its source stage waits for room instead, before it starts more work. Every wait here ends
// on cancel().
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/sample.h"

namespace conveyor::detail {

class OutputQueue {
 public:
  using Item = std::variant<Batch, Sample, std::exception_ptr>;

  enum class Status { item, end, stuck };
  struct Popped {
    Status status = Status::end;
    Item item;
    std::size_t depth = 0;  // items ready when the consumer asked
    std::size_t left = 0;   // items ready after this pop
    std::chrono::nanoseconds waited{0};
  };

  // NOLINTNEXTLINE(bugprone-throw-keyword-missing): the ring holds exception_ptrs, it is not one
  explicit OutputQueue(std::size_t capacity) : ring_(capacity < 2 ? 2 : capacity) {}

  // Pipeline side. `state`: the element order's state after the item's last element (IteratorState),
  // copied into the slot's own vector (no allocation once the slots have grown to its size). Returns the
  // depth after the push.
  std::size_t push(Item item, std::span<const std::uint64_t> state = {}) {
    std::size_t depth;
    {
      std::lock_guard lock(mutex_);
      if (size_ == ring_.size()) grow();
      Slot& slot = ring_[(head_ + size_) % ring_.size()];
      slot.item = std::move(item);
      slot.state.assign(state.begin(), state.end());
      depth = ++size_;
    }
    ready_.notify_one();
    return depth;
  }
  // No more items will come.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  // Wakes every wait; the source stage stops and the consumer sees the end.
  void cancel() {
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
    }
    ready_.notify_all();
    room_.notify_all();
  }
  // Wakes the consumer so that it re-evaluates its `stuck` predicate.
  void poke() {
    { std::lock_guard lock(mutex_); }
    ready_.notify_all();
  }
  // Source stage: waits while `limit` or more items are ready. False when cancelled.
  bool wait_for_room(std::size_t limit) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return size_ < limit || cancelled_; });
    return !cancelled_;
  }
  bool has_room(std::size_t limit) const {
    std::lock_guard lock(mutex_);
    return size_ < limit;
  }

  // Consumer side: the next item; end once closed (or cancelled) and drained; stuck when nothing is
  // ready and `stuck` says nothing can come (evaluated under the queue's lock). An item's state goes to
  // `state` (the consumer's vector, reused).
  Popped pop(const std::function<bool()>& stuck, std::vector<std::uint64_t>& state) {
    Popped out;
    std::unique_lock lock(mutex_);
    out.depth = size_;
    if (size_ == 0 && !closed_ && !cancelled_) {
      const auto start = std::chrono::steady_clock::now();
      ready_.wait(lock, [&] { return size_ > 0 || closed_ || cancelled_ || (stuck && stuck()); });
      out.waited = std::chrono::steady_clock::now() - start;
    }
    if (size_ == 0) {
      out.status = closed_ || cancelled_ ? Status::end : Status::stuck;
      return out;
    }
    Slot& slot = ring_[head_];
    out.item = std::move(*slot.item);
    slot.item.reset();
    state.assign(slot.state.begin(), slot.state.end());
    head_ = (head_ + 1) % ring_.size();
    out.left = --size_;
    lock.unlock();
    room_.notify_one();
    out.status = Status::item;
    return out;
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return size_;
  }

 private:
  struct Slot {
    std::optional<Item> item;
    std::vector<std::uint64_t> state;
  };

  void grow() {
    std::vector<Slot> bigger(ring_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move(ring_[(head_ + i) % ring_.size()]);
    ring_ = std::move(bigger);
    head_ = 0;
  }

  mutable std::mutex mutex_;
  std::condition_variable ready_;  // the consumer waits here
  std::condition_variable room_;   // the source stage waits here
  std::vector<Slot> ring_;
  std::size_t head_ = 0, size_ = 0;
  bool closed_ = false, cancelled_ = false;
};

}  // namespace conveyor::detail
