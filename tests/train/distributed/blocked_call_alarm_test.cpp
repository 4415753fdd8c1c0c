// The alarm that decides in the NCCL watch's stead when one of the watch's own calls blocks
// (src/train/distributed/blocked_call_alarm.h): it fires once, on its own thread, while the call is still
// blocked, names the call and how long it had been in progress; calls that return in time never fire it.
#include "src/train/distributed/blocked_call_alarm.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

namespace conveyor::train {
namespace {

using namespace std::chrono_literals;
using Clock = BlockedCallAlarm::Clock;

struct Fired {
  std::mutex mutex;
  std::condition_variable changed;
  int times = 0;
  std::string what;
  Clock::duration blocked{};
  std::thread::id thread;

  BlockedCallAlarm::OnBlocked callback() {
    return [this](const std::string& call, Clock::duration how_long) {
      const std::lock_guard lock(mutex);
      ++times;
      what = call;
      blocked = how_long;
      thread = std::this_thread::get_id();
      changed.notify_all();
    };
  }
  bool wait_for_first(std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, limit, [this] { return times > 0; });
  }
};

TEST(BlockedCallAlarm, FiresOnceOnItsOwnThreadWhileACallIsStillBlocked) {
  Fired fired;
  BlockedCallAlarm alarm(100ms, fired.callback(), 10ms);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> returned = false;
  const auto started = Clock::now();
  std::thread caller([&] {
    const BlockedCallAlarm::Call call = alarm.call("cudaEventQuery");
    released.wait();  // a call that does not return until the test lets it
    returned = true;
  });
  ASSERT_TRUE(fired.wait_for_first(10s));
  EXPECT_FALSE(returned) << "the alarm fires while the call is blocked, not after it returns";
  release.set_value();
  caller.join();
  const std::lock_guard lock(fired.mutex);
  EXPECT_EQ(fired.times, 1);
  EXPECT_EQ(fired.what, "cudaEventQuery");
  EXPECT_GE(fired.blocked, 100ms);
  EXPECT_LE(fired.blocked, Clock::now() - started);
  EXPECT_NE(fired.thread, caller.get_id());
  EXPECT_NE(fired.thread, std::this_thread::get_id());
  EXPECT_TRUE(alarm.fired());
}

TEST(BlockedCallAlarm, CallsThatReturnWithinTheLimitNeverFireIt) {
  Fired fired;
  {
    BlockedCallAlarm alarm(500ms, fired.callback(), 5ms);
    // Many short calls over several limits' time, and the time between calls, are not a blocked call.
    const auto until = Clock::now() + 1500ms;
    while (Clock::now() < until) {
      {
        const BlockedCallAlarm::Call call = alarm.call("short");
        std::this_thread::sleep_for(2ms);
      }
      std::this_thread::sleep_for(20ms);
    }
    std::this_thread::sleep_for(700ms);  // idle, no call in progress, for longer than the limit
    EXPECT_FALSE(alarm.fired());
  }
  EXPECT_EQ(fired.times, 0);
}

TEST(BlockedCallAlarm, EachCallIsTimedFromItsOwnStart) {
  Fired fired;
  BlockedCallAlarm alarm(400ms, fired.callback(), 5ms);
  // Back-to-back calls of 100 ms each: together far over the limit, each well under it.
  for (int i = 0; i < 6; ++i) {
    const BlockedCallAlarm::Call call = alarm.call("call " + std::to_string(i));
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_FALSE(alarm.fired());
  {
    const BlockedCallAlarm::Call call = alarm.call("the slow one");
    ASSERT_TRUE(fired.wait_for_first(10s));
  }
  const std::lock_guard lock(fired.mutex);
  EXPECT_EQ(fired.what, "the slow one");
}

TEST(BlockedCallAlarm, TornDownWhileItsCallbackWaitsTheCallbackSeesTheTeardownEnd) {
  // The watch's callback waits for the trainer's teardown (or its grace): destroying the alarm's owner must
  // not deadlock against it. Here the callback waits until the test says the owner is going.
  std::promise<void> going;
  std::shared_future<void> owner_going = going.get_future().share();
  std::atomic<bool> callback_returned = false;
  std::promise<void> entered;
  {
    BlockedCallAlarm alarm(
        50ms,
        [&](const std::string&, Clock::duration) {
          entered.set_value();
          owner_going.wait();
          callback_returned = true;
        },
        5ms);
    const BlockedCallAlarm::Call call = alarm.call("blocked");
    ASSERT_EQ(entered.get_future().wait_for(10s), std::future_status::ready);
    going.set_value();
  }  // joins the alarm's thread after its callback returned
  EXPECT_TRUE(callback_returned);
}

}  // namespace
}  // namespace conveyor::train
