// A flag that stops the threads reading shards: set once, seen by every stream (their reads and their
// retry waits return early). Shared by the reader threads and the iterator that owns them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace conveyor::detail {

class Cancellation {
 public:
  void cancel() {
    {
      std::lock_guard lock(mutex_);
      cancelled_.store(true);
    }
    wake_.notify_all();
  }
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_relaxed); }

  // Waits `duration` (a retry's back-off); returns false at once when cancelled meanwhile.
  bool wait_for(std::chrono::milliseconds duration) const {
    std::unique_lock lock(mutex_);
    return !wake_.wait_for(lock, duration, [this] { return cancelled_.load(); });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable wake_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace conveyor::detail
