// MemoryBudget: what is reserved at once stays under the budget, requests are served in arrival order, a
// request larger than the whole budget runs alone, and cancel() frees every waiter. Threads wait for
// each other through the budget's own counters, never through sleeps; a watchdog aborts a hang.
#include "conveyor/memory_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "conveyor/error.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

// Spins (yielding) until the budget has seen `count` waits: the other thread is then blocked in reserve().
void until_waiting(const MemoryBudget& budget, std::uint64_t count) {
  while (budget.waits() < count) std::this_thread::yield();
}

TEST(MemoryBudget, ReservationsWithinTheBudgetDoNotWait) {
  MemoryBudget budget(100);
  auto a = budget.reserve(40), b = budget.reserve(60);
  EXPECT_EQ(budget.in_use(), 100u);
  EXPECT_EQ(budget.waits(), 0u);
  a.release();
  EXPECT_EQ(budget.in_use(), 60u);
  { auto moved = std::move(b); }
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_EQ(budget.peak(), 100u);
}

TEST(MemoryBudget, AReservationThatDoesNotFitWaitsForBytesToComeBack) {
  const testing::Watchdog watchdog(30s, "budget wait");
  MemoryBudget budget(100);
  auto first = budget.reserve(70);
  std::atomic<bool> got{false};
  std::thread second([&] {
    auto r = budget.reserve(50);
    got = true;
  });
  until_waiting(budget, 1);
  EXPECT_FALSE(got.load());
  first.release();
  second.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(budget.peak(), 70u);  // never 120
}

TEST(MemoryBudget, ARequestLargerThanTheBudgetRunsAloneAndIsNotOvertaken) {
  const testing::Watchdog watchdog(30s, "budget over-size request");
  MemoryBudget budget(100);
  auto small = budget.reserve(10);
  std::atomic<int> order{0};
  int big_at = -1, later_at = -1;
  std::thread big([&] {
    auto r = budget.reserve(500);  // more than the whole budget
    big_at = order++;
    EXPECT_EQ(budget.in_use(), 500u);  // alone
  });
  until_waiting(budget, 1);
  std::thread later([&] {
    auto r = budget.reserve(10);  // would fit beside `small`, but came after the big one
    later_at = order++;
  });
  until_waiting(budget, 2);
  small.release();
  big.join();
  later.join();
  EXPECT_EQ(big_at, 0);
  EXPECT_EQ(later_at, 1);
  EXPECT_EQ(budget.peak(), 500u);
}

TEST(MemoryBudget, CancelWakesEveryWaiterWithAnError) {
  const testing::Watchdog watchdog(30s, "budget cancel");
  MemoryBudget budget(10);
  auto held = budget.reserve(10);
  std::atomic<int> failed{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i)
    waiters.emplace_back([&] {
      try {
        budget.reserve(5);
      } catch (const Error&) {
        ++failed;
      }
    });
  until_waiting(budget, 3);
  budget.cancel();
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(failed.load(), 3);
}

TEST(MemoryBudget, ZeroMeansNoLimitButStillCounts) {
  MemoryBudget budget(0);
  auto a = budget.reserve(1'000'000), b = budget.reserve(2'000'000);
  EXPECT_EQ(budget.peak(), 3'000'000u);
  EXPECT_EQ(budget.waits(), 0u);
}

}  // namespace
}  // namespace conveyor
