#include "conveyor/memory_budget.h"

#include <algorithm>
#include <utility>

#include "conveyor/error.h"

namespace conveyor {

MemoryBudget::Reservation& MemoryBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = other.bytes_;
  }
  return *this;
}

void MemoryBudget::Reservation::release() noexcept {
  if (budget_ != nullptr) std::exchange(budget_, nullptr)->give_back(bytes_);
}

MemoryBudget::Reservation MemoryBudget::reserve(std::size_t bytes) {
  std::unique_lock lock(mutex_);
  const std::uint64_t ticket = next_ticket_++;
  // Tickets keep arrival order: the head of the line waits for room while the others wait for their turn.
  auto fits = [&] {
    return cancelled_ || (ticket == serving_ && (budget_ == 0 || in_use_ == 0 || in_use_ + bytes <= budget_));
  };
  if (!fits()) {
    ++waits_;
    changed_.wait(lock, fits);
  }
  if (cancelled_) {
    if (ticket == serving_) ++serving_;
    changed_.notify_all();
    throw Error("memory budget: cancelled while waiting for " + std::to_string(bytes) + " bytes");
  }
  ++serving_;
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  lock.unlock();
  changed_.notify_all();  // the next ticket may fit too
  return Reservation(this, bytes);
}

void MemoryBudget::give_back(std::size_t bytes) noexcept {
  {
    std::lock_guard lock(mutex_);
    in_use_ -= bytes;
  }
  changed_.notify_all();
}

void MemoryBudget::cancel() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  changed_.notify_all();
}

std::size_t MemoryBudget::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

std::size_t MemoryBudget::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

std::uint64_t MemoryBudget::waits() const {
  std::lock_guard lock(mutex_);
  return waits_;
}

}  // namespace conveyor
