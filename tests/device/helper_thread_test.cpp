// The helper thread that submits the second nvJPEG decoder's half of a batch: a job runs on the thread,
// beside the owner's own work, wait() returns when it is done and rethrows what it threw. Needs no GPU (its
// cudaSetDevice failing on a machine without one is not an error of its own).
#include "src/device/decode/helper_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "conveyor/error.h"

namespace conveyor::cuda {
namespace {

using namespace std::chrono_literals;

TEST(HelperThread, RunsEachJobOnItsOwnThreadBesideTheOwnersWork) {
  HelperThread helper(0);
  for (int round = 0; round < 100; ++round) {
    std::thread::id ran_on;
    std::atomic<bool> owner_done{false};
    bool saw_owner_done = false;
    helper.start([&] {
      ran_on = std::this_thread::get_id();
      // The owner works meanwhile: the job sees that work end, so both ran at the same time.
      while (!owner_done.load()) std::this_thread::yield();
      saw_owner_done = true;
    });
    owner_done.store(true);
    helper.wait();
    EXPECT_NE(ran_on, std::this_thread::get_id());
    EXPECT_TRUE(saw_owner_done);
  }
}

TEST(HelperThread, WaitRethrowsWhatTheJobThrewAndTheThreadGoesOn) {
  HelperThread helper(0);
  helper.start([] { throw std::runtime_error("nvJPEG failed"); });
  EXPECT_THROW(helper.wait(), std::runtime_error);
  int value = 0;
  helper.start([&] { value = 7; });
  EXPECT_NO_THROW(helper.wait());
  EXPECT_EQ(value, 7);
  EXPECT_NO_THROW(helper.wait()) << "with no job in hand, wait() returns at once";
}

TEST(HelperThread, ASecondJobBeforeTheFirstWasWaitedForIsRefused) {
  HelperThread helper(0);
  std::atomic<bool> release{false};
  helper.start([&] {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  });
  EXPECT_THROW(helper.start([] {}), InvalidArgument);
  release.store(true);
  helper.wait();
  // Done but not waited for: refused too, so that its failure cannot be lost.
  helper.start([] { throw std::runtime_error("lost?"); });
  std::this_thread::sleep_for(20ms);
  EXPECT_THROW(helper.start([] {}), InvalidArgument);
  EXPECT_THROW(helper.wait(), std::runtime_error);
}

TEST(HelperThread, TheDestructorWaitsForTheJobInHand) {
  std::atomic<bool> finished{false};
  {
    HelperThread helper(0);
    helper.start([&] {
      std::this_thread::sleep_for(50ms);
      finished.store(true);
    });
  }
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace conveyor::cuda
