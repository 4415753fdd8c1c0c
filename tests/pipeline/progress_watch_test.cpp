// ProgressWatch: what each thread of a run is doing, and one report when the run stops making progress.
#include "conveyor/progress_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "support/watchdog.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

// A thread that joins `watch`, marks two nested activities and waits there until released.
class BlockedMember {
 public:
  BlockedMember(std::shared_ptr<ProgressWatch> watch, std::string name)
      : thread_([this, watch = std::move(watch), name = std::move(name)] {
          const ProgressWatch::Member member(watch, name);
          const ProgressWatch::Doing outer("step", 812);
          const ProgressWatch::Doing inner("enqueueing the NCCL all-reduce of gradient bucket", 3);
          std::unique_lock lock(mutex_);
          marked_ = true;
          changed_.notify_all();
          changed_.wait(lock, [&] { return released_; });
        }) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return marked_; });
  }
  ~BlockedMember() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool marked_ = false, released_ = false;
  std::thread thread_;  // last: started once the rest exists
};

TEST(ProgressWatch, AStallIsReportedOnceNamingWhatEveryMemberWaitsFor) {
  const testing::Watchdog watchdog(60s, "AStallIsReportedOnceNamingWhatEveryMemberWaitsFor");
  std::promise<std::string> reported;
  std::mutex reports_mutex;
  int reports = 0;
  auto watch = std::make_shared<ProgressWatch>(
      ProgressWatch::Options{.limit = 50ms, .on_stall = [&](const std::string& text) {
                               std::lock_guard lock(reports_mutex);
                               if (reports++ == 0) reported.set_value(text);
                             }});
  const ProgressWatch::Member me(watch, "training loop");
  const ProgressWatch::Doing waiting("waiting for the replicas' threads");
  const BlockedMember replica(watch, "replica on gpu:1");
  std::future<std::string> report = reported.get_future();
  ASSERT_EQ(report.wait_for(30s), std::future_status::ready) << "no report after the limit";
  const std::string text = report.get();
  EXPECT_NE(text.find("no progress for"), std::string::npos) << text;
  EXPECT_NE(text.find("training loop: waiting for the replicas' threads"), std::string::npos) << text;
  EXPECT_NE(text.find("replica on gpu:1: step 812 > enqueueing the NCCL all-reduce of gradient bucket 3"),
            std::string::npos)
      << text;
  // Still stalled, the same stall: reported once, however long it lasts.
  while (watch->stalls() == 0) std::this_thread::yield();
  const auto until = std::chrono::steady_clock::now() + 300ms;
  while (std::chrono::steady_clock::now() < until) std::this_thread::yield();
  EXPECT_EQ(watch->stalls(), 1u);
}

TEST(ProgressWatch, ARunThatKeepsProgressingIsNeverReported) {
  auto watch = std::make_shared<ProgressWatch>(
      ProgressWatch::Options{.limit = 200ms, .on_stall = [](const std::string&) {}});
  const ProgressWatch::Member me(watch, "training loop");
  const auto until = std::chrono::steady_clock::now() + 800ms;
  while (std::chrono::steady_clock::now() < until) {
    const ProgressWatch::Doing doing("queueing step", 1);
    watch->progress();
    std::this_thread::yield();
  }
  EXPECT_EQ(watch->stalls(), 0u);
  EXPECT_GT(watch->progress_count(), 0u);
}

TEST(ProgressWatch, AStallAfterProgressResumedIsReportedAgain) {
  const testing::Watchdog watchdog(60s, "AStallAfterProgressResumedIsReportedAgain");
  auto watch = std::make_shared<ProgressWatch>(
      ProgressWatch::Options{.limit = 30ms, .on_stall = [](const std::string&) {}});
  while (watch->stalls() < 1) std::this_thread::yield();
  watch->progress();
  while (watch->stalls() < 2) std::this_thread::yield();
  SUCCEED();
}

TEST(ProgressWatch, NestedMarksReadAsAPathAndUnwindWithTheirScopes) {
  auto watch = std::make_shared<ProgressWatch>(ProgressWatch::Options{.limit = 0ms});
  const ProgressWatch::Member me(watch, "feeder gpu:0 staging thread");
  {
    const ProgressWatch::Doing outer("staging batch", 7);
    {
      const ProgressWatch::Doing inner("nvJPEG hardware decode (nvjpegDecodeBatchedEx), images:", 83);
      EXPECT_NE(watch->report().find("feeder gpu:0 staging thread: staging batch 7 > nvJPEG hardware decode "
                                     "(nvjpegDecodeBatchedEx), images: 83 (for "),
                std::string::npos)
          << watch->report();
    }
    const std::string text = watch->report();
    EXPECT_NE(text.find("staging thread: staging batch 7 (for "), std::string::npos) << text;
    EXPECT_EQ(text.find("nvJPEG"), std::string::npos) << text;
  }
  EXPECT_NE(watch->report().find("staging thread: (nothing marked)"), std::string::npos) << watch->report();
}

TEST(ProgressWatch, AThreadOutsideAWatchIsNotListedAndALeftMemberIsGone) {
  auto watch = std::make_shared<ProgressWatch>(ProgressWatch::Options{.limit = 0ms});
  const ProgressWatch::Doing nobody("this thread joined no watch");
  {
    const ProgressWatch::Member member(watch, "a member for a while");
    EXPECT_NE(watch->report().find("a member for a while"), std::string::npos);
  }
  const std::string text = watch->report();
  EXPECT_EQ(text.find("a member for a while"), std::string::npos) << text;
  EXPECT_EQ(text.find("joined no watch"), std::string::npos) << text;
  EXPECT_NE(text.find("no thread has joined the watch"), std::string::npos) << text;
}

TEST(ProgressWatch, ANullWatchMakesMembershipDoNothing) {
  const ProgressWatch::Member member(nullptr, "nobody watches");
  const ProgressWatch::Doing doing("nothing to record", 1);
  SUCCEED();
}

}  // namespace
}  // namespace conveyor
