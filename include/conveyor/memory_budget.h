// A budget of bytes shared by threads that allocate large, short-lived buffers (the pipeline's decodes):
// reserve() waits until the bytes fit, so the sum reserved at once stays under the budget.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace conveyor {

class MemoryBudget {
 public:
  // bytes == 0: no limit (reserve() never waits, but is still counted).
  explicit MemoryBudget(std::size_t bytes) noexcept : budget_(bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Gives its bytes back when destroyed. Move-only.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept : budget_(other.budget_), bytes_(other.bytes_) {
      other.budget_ = nullptr;
    }
    Reservation& operator=(Reservation&& other) noexcept;
    ~Reservation() { release(); }
    std::size_t bytes() const noexcept { return budget_ ? bytes_ : 0; }
    void release() noexcept;

   private:
    friend class MemoryBudget;
    Reservation(MemoryBudget* budget, std::size_t bytes) noexcept : budget_(budget), bytes_(bytes) {}
    MemoryBudget* budget_ = nullptr;
    std::size_t bytes_ = 0;
  };

  // Waits until `bytes` fit under the budget, first come first served (a large request is not overtaken
  // forever by small ones), then reserves them. A request larger than the whole budget waits until nothing
  // else is reserved and then runs alone: it is never refused. Throws Error after cancel().
  // Must not be called while the caller holds another reservation of this budget (it could wait for itself).
  Reservation reserve(std::size_t bytes);
  // Wakes every waiter; their reserve() throws. For shutdown.
  void cancel();

  std::size_t budget() const noexcept { return budget_; }
  std::size_t in_use() const;
  std::size_t peak() const;
  std::uint64_t waits() const;  // reserve() calls that had to wait

 private:
  void give_back(std::size_t bytes) noexcept;

  const std::size_t budget_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t in_use_ = 0, peak_ = 0;
  std::uint64_t next_ticket_ = 0, serving_ = 0, waits_ = 0;
  bool cancelled_ = false;
};

}  // namespace conveyor
