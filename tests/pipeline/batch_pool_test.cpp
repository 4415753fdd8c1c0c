// The bounded pool of batch buffers.
#include "src/memory/batch_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "conveyor/error.h"
#include "support/watchdog.h"
#include "tests/support/counting_memory.h"

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

// The pool must take every buffer from the resource it was given, say what kind of memory that is (this one
// claims page-locked memory), and give everything back when it dies.
using conveyor::testing::CountingMemory;

TEST(BatchPool, ABufferKeepsThePoolAndItsMemoryAliveUntilItComesBack) {
  const auto memory = std::make_shared<CountingMemory>(true);
  std::shared_ptr<BatchBuffer> buffer;
  std::weak_ptr<BatchPool> watch;
  {
    auto pool = BatchPool::create(1, 2, {2, 2, 1}, memory);
    watch = pool;
    buffer = pool->acquire();
    ASSERT_TRUE(buffer);
  }
  EXPECT_FALSE(watch.expired()) << "the pool died while one of its buffers was lent out";
  EXPECT_GT(memory->outstanding, 0u) << "the lent buffer's memory was given back";
  buffer->pixels[7] = 1;  // still valid (ASan checks)
  buffer->labels[1] = 5;
  EXPECT_EQ(buffer->pixels[7], 1);
  EXPECT_EQ(buffer->labels[1], 5);
  buffer.reset();
  EXPECT_TRUE(watch.expired()) << "the last buffer came back and the pool still lives";
  EXPECT_EQ(memory->outstanding, 0u);
}

TEST(BatchPool, RejectsAnEmptyConfiguration) {
  EXPECT_THROW(BatchPool::create(0, 1, {1, 1, 1}), InvalidArgument);
  EXPECT_THROW(BatchPool::create(1, 0, {1, 1, 1}), InvalidArgument);
  EXPECT_THROW(BatchPool::create(1, 1, {0, 1, 1}), InvalidArgument);
}

TEST(BatchPool, IsPageableByDefault) { EXPECT_FALSE(BatchPool::create(1, 1, {1, 1, 1})->pinned()); }

TEST(BatchPool, TakesItsBuffersFromTheGivenMemory) {
  auto memory = std::make_shared<CountingMemory>(true);
  {
    auto pool = BatchPool::create(2, 4, {2, 2, 3}, memory);
    EXPECT_TRUE(pool->pinned());
    auto a = pool->acquire();
    auto b = pool->acquire();
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(a->pinned);
    EXPECT_EQ(memory->allocations, 2);
    // Pixels, labels and per-sample information of 4 samples fit in what the pool took.
    EXPECT_GE(memory->outstanding, 2 * (4 * 12 + 4 * sizeof(std::int64_t) + 4 * sizeof(SampleInfo)));
    a.reset();
    auto c = pool->acquire();  // reuses a's buffer
    EXPECT_EQ(memory->allocations, 2);
  }
  EXPECT_EQ(memory->outstanding, 0u);
}

}  // namespace
}  // namespace conveyor::detail
