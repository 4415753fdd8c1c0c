// The threads that issue each local replica's work: every job of a run runs at the same time (a job that
// waits for all the others would otherwise never end), runs repeat on the same threads, and a failure comes
// back to the caller once every job has returned.
#include "src/train/distributed/replica_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/watchdog.h"

namespace conveyor::train {
namespace {

TEST(ReplicaThreads, RunsEveryJobOfARunAtTheSameTime) {
  const testing::Watchdog watchdog(std::chrono::seconds(60), "replica threads");
  for (const std::size_t count : {1u, 2u, 4u, 8u}) {
    ReplicaThreads threads(count);
    EXPECT_EQ(threads.size(), count);
    // Each job waits until all have arrived, as NCCL's first collective does: with fewer threads than
    // jobs running at once this never ends (and the watchdog fails the test).
    std::barrier meeting(static_cast<std::ptrdiff_t>(count));
    std::vector<int> ran(count, 0);
    threads.run([&](std::size_t i) {
      meeting.arrive_and_wait();
      ++ran[i];
    });
    EXPECT_EQ(ran, std::vector<int>(count, 1));
  }
}

TEST(ReplicaThreads, JobIKeepsItsThreadFromRunToRun) {
  const testing::Watchdog watchdog(std::chrono::seconds(60), "replica threads");
  ReplicaThreads threads(3);
  std::vector<std::thread::id> first(3), again(3);
  threads.run([&](std::size_t i) { first[i] = std::this_thread::get_id(); });
  for (int run = 0; run < 50; ++run) {
    threads.run([&](std::size_t i) { again[i] = std::this_thread::get_id(); });
    EXPECT_EQ(again, first);
  }
  EXPECT_EQ(std::set<std::thread::id>(first.begin(), first.end()).size(), 3u);
  EXPECT_EQ(std::count(first.begin(), first.end(), std::this_thread::get_id()), 0);
}

TEST(ReplicaThreads, AFailureIsRethrownAfterEveryJobReturned) {
  const testing::Watchdog watchdog(std::chrono::seconds(60), "replica threads");
  ReplicaThreads threads(4);
  std::atomic<int> finished{0};
  try {
    threads.run([&](std::size_t i) {
      if (i == 1 || i == 3) throw std::runtime_error("replica " + std::to_string(i));
      ++finished;
    });
    FAIL() << "the failure was not rethrown";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "replica 1") << "the lowest failing replica's exception";
  }
  EXPECT_EQ(finished.load(), 2);
  // The threads are still there for the next run.
  std::atomic<int> ran{0};
  threads.run([&](std::size_t) { ++ran; });
  EXPECT_EQ(ran.load(), 4);
}

}  // namespace
}  // namespace conveyor::train
