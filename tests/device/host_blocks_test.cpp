// Host memory a GPU feeder keeps rather than frees while it runs: the page-locked blocks of the pipelines'
// batch buffers (PinnedBlockCache) and its grow-only staging (RetainedHostBuffer). Freeing page-locked
// memory waits for the whole device, so neither may free before it dies. Runs without a GPU: both take any
// HostMemoryResource, here the pipeline's own pageable memory, counted.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "conveyor/host_memory.h"
#include "src/device/pinned_block_cache.h"
#include "src/device/retained_host_buffer.h"
#include "src/memory/batch_pool.h"
#include "tests/support/counting_memory.h"

namespace conveyor::cuda {
namespace {

using conveyor::testing::CountingMemory;  // the pipeline's pageable memory, with its calls counted

TEST(PinnedBlockCache, ABlockGivenBackServesTheNextRequestOfTheSameSize) {
  auto counted = std::make_shared<CountingMemory>();
  PinnedBlockCache cache(counted);
  void* first = cache.allocate(4096);
  std::memset(first, 7, 4096);
  cache.deallocate(first, 4096);
  EXPECT_EQ(counted->deallocations, 0) << "given back while the cache lives: kept, not freed";
  EXPECT_EQ(cache.kept(4096), 1u);
  EXPECT_EQ(cache.allocate(4096), first);
  EXPECT_EQ(counted->allocations, 1);
  void* other = cache.allocate(8192);  // another size: a block of its own
  EXPECT_NE(other, first);
  EXPECT_EQ(counted->allocations, 2);
  cache.deallocate(first, 4096);
  cache.deallocate(other, 8192);
}

TEST(PinnedBlockCache, ReserveMakesTheBlocksBeforeTheyAreAskedFor) {
  auto counted = std::make_shared<CountingMemory>();
  PinnedBlockCache cache(counted);
  const std::size_t bytes = detail::BatchPool::buffer_bytes(256, {224, 224, 3});
  cache.reserve(bytes, 3);
  EXPECT_EQ(cache.kept(bytes), 3u);
  EXPECT_EQ(cache.made(), 3u);
  cache.reserve(bytes, 2);  // already there
  EXPECT_EQ(cache.made(), 3u);
  void* blocks[3];
  for (void*& block : blocks) block = cache.allocate(bytes);
  EXPECT_EQ(counted->allocations, 3) << "the pipeline's first buffers were made at warm-up";
  for (void* block : blocks) cache.deallocate(block, bytes);
}

TEST(PinnedBlockCache, FillCountsTheBlocksAlreadyLentOut) {
  // A startup thread fills the cache while the pipeline already runs: blocks the pipeline holds count.
  auto counted = std::make_shared<CountingMemory>();
  PinnedBlockCache cache(counted);
  void* a = cache.allocate(4096);
  void* b = cache.allocate(4096);
  EXPECT_EQ(cache.made_on_demand(), 2u);
  cache.fill(4096, 3);
  EXPECT_EQ(counted->allocations.load(), 3) << "fill made more than the one block missing";
  EXPECT_EQ(cache.made_on_demand(), 2u) << "fill's block counted as one the pipeline waited for";
  EXPECT_GE(cache.on_demand_seconds(), 0.0);
  EXPECT_EQ(cache.kept(4096), 1u);
  cache.fill(4096, 3);
  EXPECT_EQ(counted->allocations.load(), 3);
  cache.fill(8192, 2);  // another size has blocks of its own
  EXPECT_EQ(cache.kept(8192), 2u);
  EXPECT_EQ(cache.made(), 5u);
  cache.deallocate(a, 4096);
  cache.deallocate(b, 4096);
  EXPECT_EQ(cache.kept(4096), 3u);
  EXPECT_EQ(counted->deallocations.load(), 0) << "a block was freed while the cache lives";
}

TEST(PinnedBlockCache, FillWhileThePipelineTakesBlocksMakesAtMostOneMore) {
  // The startup thread fills while the pipeline's source stage takes blocks one at a time (run under TSan).
  auto counted = std::make_shared<CountingMemory>();
  PinnedBlockCache cache(counted);
  std::vector<void*> taken;
  std::thread pipeline([&] {
    for (int i = 0; i < 8; ++i) taken.push_back(cache.allocate(4096));
  });
  cache.fill(4096, 8);
  pipeline.join();
  EXPECT_GE(cache.made(), 8u);
  EXPECT_LE(cache.made(), 9u) << "fill and the pipeline made more than one block too many";
  EXPECT_EQ(std::set<void*>(taken.begin(), taken.end()).size(), taken.size()) << "a block was lent twice";
  for (void* block : taken) cache.deallocate(block, 4096);
  EXPECT_EQ(cache.kept(4096), cache.made());
  EXPECT_EQ(counted->deallocations.load(), 0);
}

// Waits up to 10 s for `done`; false if it never held.
template <typename Done>
bool eventually(Done done) {
  for (int i = 0; i < 1000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

TEST(PinnedBlockCache, OnceAPipelineWaitedForASizeBlocksOfItAreMadeAhead) {
  auto counted = std::make_shared<CountingMemory>();
  PinnedBlockCache cache(counted, 3);
  cache.reserve(8192, 1);  // what warm-up made: no thread for it
  void* warm = cache.allocate(8192);
  EXPECT_EQ(cache.made_ahead(), 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(cache.kept(8192), 0u) << "made ahead before any pipeline waited for a block of that size";

  void* waited = cache.allocate(8192);  // none kept: made on demand, and from now on three kept ready
  EXPECT_EQ(cache.made_on_demand(), 1u);
  ASSERT_TRUE(eventually([&] { return cache.kept(8192) == 3; })) << cache.kept(8192) << " kept";
  std::vector<void*> next;
  for (int i = 0; i < 3; ++i) next.push_back(cache.allocate(8192));
  EXPECT_EQ(cache.made_on_demand(), 1u) << "the blocks made ahead did not serve the next requests";
  ASSERT_TRUE(eventually([&] { return cache.kept(8192) == 3; })) << "not made again after they were taken";
  EXPECT_EQ(cache.made_ahead(), 6u);
  EXPECT_EQ(cache.kept(4096), 0u) << "another size made ahead";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(cache.made(), 8u) << "more than three kept ready";

  for (void* block : next) cache.deallocate(block, 8192);
  cache.deallocate(waited, 8192);
  cache.deallocate(warm, 8192);
  EXPECT_EQ(counted->deallocations.load(), 0);
}

TEST(PinnedBlockCache, PausedItMakesNothingAheadUntilResumedThenWhatItNoted) {
  auto counted = std::make_shared<CountingMemory>();
  PinnedBlockCache cache(counted, 2);
  cache.pause_making_ahead();          // a feeder's, before its first batch is staged
  void* first = cache.allocate(8192);  // made on demand: the size is noted for making ahead
  void* other = cache.allocate(4096);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(cache.made_ahead(), 0u) << "made ahead while paused";
  EXPECT_EQ(cache.made(), 2u);
  cache.resume_making_ahead();
  ASSERT_TRUE(eventually([&] { return cache.kept(8192) == 2 && cache.kept(4096) == 2; }))
      << cache.kept(8192) << " and " << cache.kept(4096) << " kept";
  EXPECT_EQ(cache.made_ahead(), 4u);
  cache.resume_making_ahead();  // again: nothing changes
  cache.pause_making_ahead();   // paused again: a block taken is not made again until resumed
  void* taken = cache.allocate(8192);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(cache.kept(8192), 1u);
  cache.resume_making_ahead();
  EXPECT_TRUE(eventually([&] { return cache.kept(8192) == 2; }));
  for (void* block : {first, taken}) cache.deallocate(block, 8192);
  cache.deallocate(other, 4096);
}

TEST(PinnedBlockCache, WithoutMakeAheadEveryMissingBlockIsMadeOnDemand) {
  auto counted = std::make_shared<CountingMemory>();
  PinnedBlockCache cache(counted);
  void* a = cache.allocate(4096);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(cache.kept(4096), 0u);
  EXPECT_EQ(cache.made_ahead(), 0u);
  cache.deallocate(a, 4096);
}

TEST(PinnedBlockCache, DyingWhileMakingAheadFreesEveryBlock) {
  // Under TSan: the thread is stopped and joined before the blocks are freed.
  auto counted = std::make_shared<CountingMemory>();
  for (int round = 0; round < 20; ++round) {
    PinnedBlockCache cache(counted, 8);
    void* block = cache.allocate(1 << 16);
    cache.deallocate(block, 1 << 16);
  }
  EXPECT_EQ(counted->deallocations.load(), counted->allocations.load());
}

TEST(PinnedBlockCache, EveryBlockIsFreedWhenTheCacheDies) {
  auto counted = std::make_shared<CountingMemory>();
  {
    auto cache = std::make_shared<PinnedBlockCache>(counted);
    cache->reserve(1024, 2);
    void* lent = cache->allocate(2048);
    cache->deallocate(lent, 2048);
  }
  EXPECT_EQ(counted->allocations, 3);
  EXPECT_EQ(counted->deallocations, 3);
}

TEST(PinnedBlockCache, ABatchPoolOverItAsksForTheBytesWarmUpReserves) {
  // The size warm-up reserves must be the size the pipeline's pool asks for, or warm-up reserves in vain.
  auto counted = std::make_shared<CountingMemory>();
  auto cache = std::make_shared<PinnedBlockCache>(counted);
  const ImageShape shape{32, 48, 3};
  cache->reserve(detail::BatchPool::buffer_bytes(16, shape), 2);
  {
    auto pool = detail::BatchPool::create(2, 16, shape, cache);
    auto a = pool->acquire();
    auto b = pool->acquire();
    ASSERT_TRUE(a && b);
  }
  EXPECT_EQ(counted->allocations, 2) << "the pool made buffers of another size than warm-up reserved";
}

TEST(RetainedHostBuffer, GrowingKeepsTheOldBlockUntilTheBufferDies) {
  auto counted = std::make_shared<CountingMemory>();
  {
    RetainedHostBuffer buffer(counted);
    std::byte* small = buffer.reserve(100);
    EXPECT_EQ(buffer.reserve(50), small) << "room enough: the same block";
    std::byte* grown = buffer.reserve(1000);
    EXPECT_NE(grown, small);
    EXPECT_GE(buffer.size(), 1000u);
    EXPECT_EQ(buffer.blocks(), 2u);
    EXPECT_EQ(counted->deallocations, 0) << "a copy may still read the old block: nothing freed while in use";
    buffer.reserve(1500);  // twice the last block when that is more than asked
    EXPECT_EQ(buffer.size(), 2000u);
    EXPECT_EQ(buffer.blocks(), 3u);
  }
  EXPECT_EQ(counted->deallocations, counted->allocations.load());
}

}  // namespace
}  // namespace conveyor::cuda
