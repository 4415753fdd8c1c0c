// DecodeLanes (src/device/decode/decode_lanes.h): every lane runs once per run, at the same time, lane 0 on
// the caller's thread; errors come back after every lane has finished; the threads stop with the object.
#include "src/device/decode/decode_lanes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/error.h"
#include "support/watchdog.h"

namespace conveyor::cuda {
namespace {

using namespace std::chrono_literals;

TEST(DecodeLanes, EveryLaneRunsOncePerRunAndLaneZeroOnTheCaller) {
  const testing::Watchdog watchdog(30s, "DecodeLanes.EveryLaneRunsOncePerRunAndLaneZeroOnTheCaller");
  DecodeLanes lanes(4);
  ASSERT_EQ(lanes.size(), 4u);
  for (int run = 0; run < 50; ++run) {
    std::vector<int> calls(4, 0);  // each lane writes its own element
    std::vector<std::thread::id> threads(4);
    lanes.run([&](std::size_t lane) {
      ++calls[lane];
      threads[lane] = std::this_thread::get_id();
    });
    EXPECT_EQ(calls, (std::vector<int>{1, 1, 1, 1})) << "run " << run;
    EXPECT_EQ(threads[0], std::this_thread::get_id());
    for (std::size_t lane = 1; lane < 4; ++lane) EXPECT_NE(threads[lane], std::this_thread::get_id());
  }
}

TEST(DecodeLanes, TheLanesRunAtTheSameTime) {
  const testing::Watchdog watchdog(30s, "DecodeLanes.TheLanesRunAtTheSameTime");
  // Each lane waits for all the others to arrive: only lanes that run at once get past it.
  DecodeLanes lanes(3);
  std::atomic<int> arrived{0};
  lanes.run([&](std::size_t) {
    ++arrived;
    while (arrived.load() < 3) std::this_thread::yield();
  });
  EXPECT_EQ(arrived.load(), 3);
}

TEST(DecodeLanes, TheLowestLanesErrorComesBackAfterEveryLaneHasFinished) {
  const testing::Watchdog watchdog(30s, "DecodeLanes.TheLowestLanesErrorComesBackAfterEveryLaneHasFinished");
  DecodeLanes lanes(3);
  std::atomic<int> finished{0};
  try {
    lanes.run([&](std::size_t lane) {
      if (lane == 2) {
        std::this_thread::sleep_for(20ms);
        ++finished;
        throw std::runtime_error("lane 2");
      }
      if (lane == 1) {
        ++finished;
        throw std::runtime_error("lane 1");
      }
      ++finished;
    });
    FAIL() << "expected lane 1's error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "lane 1");
  }
  EXPECT_EQ(finished.load(), 3) << "run returned before every lane had finished";
  int calls = 0;
  lanes.run([&](std::size_t lane) {
    if (lane == 0) ++calls;
  });
  EXPECT_EQ(calls, 1) << "a run after an error runs as usual";
}

TEST(DecodeLanes, OneLaneIsTheCallerAloneAndNoneIsRefused) {
  DecodeLanes one(1);
  std::thread::id where;
  one.run([&](std::size_t) { where = std::this_thread::get_id(); });
  EXPECT_EQ(where, std::this_thread::get_id());
  EXPECT_THROW(DecodeLanes(0), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::cuda
