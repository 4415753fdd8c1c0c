#include "src/train/distributed/blocked_call_alarm.h"

#include <utility>

namespace conveyor::train {

BlockedCallAlarm::BlockedCallAlarm(std::chrono::milliseconds limit, OnBlocked on_blocked,
                                   std::chrono::milliseconds poll_interval)
    : limit_(limit), poll_interval_(poll_interval), on_blocked_(std::move(on_blocked)) {
  thread_ = std::thread([this] { run(); });
}

BlockedCallAlarm::~BlockedCallAlarm() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

BlockedCallAlarm::Call BlockedCallAlarm::call(std::string what) {
  const std::lock_guard lock(mutex_);
  since_ = Clock::now();
  what_ = std::move(what);
  return Call(*this);
}

void BlockedCallAlarm::end() {
  const std::lock_guard lock(mutex_);
  since_.reset();
}

bool BlockedCallAlarm::fired() const {
  const std::lock_guard lock(mutex_);
  return fired_;
}

void BlockedCallAlarm::run() {
  std::unique_lock lock(mutex_);
  while (!stop_ && !fired_) {
    wake_.wait_for(lock, poll_interval_, [this] { return stop_; });
    if (stop_ || !since_) continue;
    const Clock::duration blocked = Clock::now() - *since_;
    if (blocked <= limit_) continue;
    fired_ = true;
    const std::string what = what_;
    lock.unlock();  // the call may end meanwhile; on_blocked may wait for the owner's teardown
    on_blocked_(what, blocked);
    return;
  }
}

}  // namespace conveyor::train
