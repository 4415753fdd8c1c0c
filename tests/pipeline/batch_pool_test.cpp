// The bounded pool of batch buffers.
#include "src/memory/batch_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "conveyor/error.h"
#include "support/watchdog.h"

namespace conveyor::detail {
namespace {

TEST(BatchPool, MakesBuffersOnDemandUpToItsSize) {
  auto pool = BatchPool::create(2, 8, {4, 4, 3});
  EXPECT_EQ(pool->allocated(), 0u);
  auto a = pool->acquire();
  auto b = pool->acquire();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(pool->allocated(), 2u);
  EXPECT_EQ(a->capacity, 8u);
  EXPECT_EQ(a->shape, (ImageShape{4, 4, 3}));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a->pixels) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a->labels) % 64, 0u);
  EXPECT_TRUE(pool->exhausted());
  EXPECT_FALSE(pool->try_acquire());
  a.reset();  // the deleter gives it back
  EXPECT_FALSE(pool->exhausted());
  auto c = pool->try_acquire();
  ASSERT_TRUE(c);
  EXPECT_EQ(pool->allocated(), 2u);  // reused, not made
}

TEST(BatchPool, AWaitingAcquireWakesWhenABufferComesBack) {
  testing::Watchdog watchdog(std::chrono::seconds(5), "pool acquire");
  auto pool = BatchPool::create(1, 1, {1, 1, 1});
  auto held = pool->acquire();
  bool told = false;
  std::thread giver([&] {
    while (!pool->waiting()) std::this_thread::yield();
    held.reset();
  });
  auto got = pool->acquire([&] { told = true; });
  giver.join();
  EXPECT_TRUE(got);
  EXPECT_TRUE(told);
  EXPECT_FALSE(pool->waiting());
}

TEST(BatchPool, CancelWakesAWaiterWithNothing) {
  testing::Watchdog watchdog(std::chrono::seconds(5), "pool cancel");
  auto pool = BatchPool::create(1, 1, {1, 1, 1});
  auto held = pool->acquire();
  std::thread canceller([&] {
    while (!pool->waiting()) std::this_thread::yield();
    pool->cancel();
  });
  EXPECT_FALSE(pool->acquire());
  canceller.join();
}

TEST(BatchPool, ABufferKeepsThePoolAlive) {
  std::shared_ptr<BatchBuffer> buffer;
  {
    auto pool = BatchPool::create(1, 2, {2, 2, 1});
    buffer = pool->acquire();
  }
  buffer->pixels[7] = 1;  // still valid: the deleter holds the pool
  buffer->labels[1] = 5;
  buffer.reset();
}

TEST(BatchPool, RejectsAnEmptyConfiguration) {
  EXPECT_THROW(BatchPool::create(0, 1, {1, 1, 1}), InvalidArgument);
  EXPECT_THROW(BatchPool::create(1, 0, {1, 1, 1}), InvalidArgument);
  EXPECT_THROW(BatchPool::create(1, 1, {0, 1, 1}), InvalidArgument);
}

TEST(BatchPool, IsPageLockedOnlyWithAGpu) {
  auto pool = BatchPool::create(1, 1, {1, 1, 1});
  EXPECT_EQ(pool->pinned(), cuda_device_present());
  EXPECT_FALSE(BatchPool::create(1, 1, {1, 1, 1}, /*want_pinned=*/false)->pinned());
}

}  // namespace
}  // namespace conveyor::detail
