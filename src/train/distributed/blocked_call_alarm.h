// A call that may block without end, timed by a thread that makes no such call.
//
// CollectiveWatch polls the GPU with CUDA calls, and a CUDA call can itself block behind a stuck
// collective: the driver makes some calls of one thread wait for another's (a cudaFree of the trainer's,
// waiting for the device to finish, holds up the watch's cudaEventQuery). The watch would then never see
// that the collectives stopped. PyTorch's ProcessGroupNCCL met the same and added a heartbeat monitor that
// makes no CUDA call; this is ours. `on_blocked` is called once, on the alarm's own thread, when a call has
// been in progress for longer than `limit`: it is the hang, seen from outside.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace conveyor::train {

class BlockedCallAlarm {
 public:
  using Clock = std::chrono::steady_clock;
  // what: the call's name; blocked: how long it had been in progress.
  using OnBlocked = std::function<void(const std::string& what, Clock::duration blocked)>;

  BlockedCallAlarm(std::chrono::milliseconds limit, OnBlocked on_blocked,
                   std::chrono::milliseconds poll_interval = std::chrono::milliseconds(100));
  ~BlockedCallAlarm();  // stops the thread and joins it (after on_blocked returns, if it runs)
  BlockedCallAlarm(const BlockedCallAlarm&) = delete;
  BlockedCallAlarm& operator=(const BlockedCallAlarm&) = delete;

  // Times one call from construction to destruction. One at a time: the alarm watches one thread's calls.
  class Call {
   public:
    ~Call() { alarm_.end(); }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    friend class BlockedCallAlarm;
    explicit Call(BlockedCallAlarm& alarm) : alarm_(alarm) {}
    BlockedCallAlarm& alarm_;
  };
  [[nodiscard]] Call call(std::string what);

  bool fired() const;

 private:
  void end();
  void run();

  const std::chrono::milliseconds limit_, poll_interval_;
  const OnBlocked on_blocked_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Clock::time_point> since_;  // the call in progress began then
  std::string what_;
  bool fired_ = false, stop_ = false;
  std::thread thread_;  // last: starts after everything it reads exists
};

}  // namespace conveyor::train
