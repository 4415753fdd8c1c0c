// RecyclingHostMemory: a worker's split pipelines come and go, and their batch buffers must not go back to
// the kernel (to be faulted in again) between them, nor pile up without bound.
#include "src/service/common/recycling_host_memory.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "tests/support/counting_memory.h"

namespace conveyor::service::detail {
namespace {

using conveyor::testing::CountingMemory;

constexpr std::size_t kBatch = 1 << 20;

TEST(RecyclingHostMemory, ABlockFreedIsTheNextOfItsSize) {
  auto upstream = std::make_shared<CountingMemory>();
  RecyclingHostMemory memory(upstream, 8 * kBatch);
  void* first = memory.allocate(kBatch);
  memory.deallocate(first, kBatch);
  EXPECT_EQ(memory.idle_bytes(), kBatch);
  EXPECT_EQ(memory.allocate(kBatch), first);
  EXPECT_EQ(memory.idle_bytes(), 0u);
  // Another size is not served from it.
  void* other = memory.allocate(2 * kBatch);
  EXPECT_EQ(upstream->allocations, 2);
  memory.deallocate(other, 2 * kBatch);
  memory.deallocate(first, kBatch);
  EXPECT_EQ(upstream->deallocations, 0);
}

TEST(RecyclingHostMemory, TheMostRecentlyFreedBlockComesBackFirst) {
  RecyclingHostMemory memory(std::make_shared<CountingMemory>(), 8 * kBatch);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(memory.allocate(kBatch));
  for (void* block : blocks) memory.deallocate(block, kBatch);
  // Freed in the order 0, 1, 2, 3: handed out again 3, 2, 1, 0.
  for (int i = 3; i >= 0; --i) EXPECT_EQ(memory.allocate(kBatch), blocks[static_cast<std::size_t>(i)]) << i;
  for (void* block : blocks) memory.deallocate(block, kBatch);
}

TEST(RecyclingHostMemory, KeepsNoMoreThanItsBoundAndGivesTheRestBack) {
  auto upstream = std::make_shared<CountingMemory>();
  {
    RecyclingHostMemory memory(upstream, 3 * kBatch);
    std::vector<void*> blocks;
    for (int i = 0; i < 5; ++i) blocks.push_back(memory.allocate(kBatch));
    for (void* block : blocks) memory.deallocate(block, kBatch);
    EXPECT_EQ(memory.idle_bytes(), 3 * kBatch);
    EXPECT_EQ(upstream->deallocations, 2);
    EXPECT_EQ(upstream->outstanding, 3 * kBatch);
    // The next split's five buffers: three kept ones, two new.
    for (int i = 0; i < 5; ++i) blocks[static_cast<std::size_t>(i)] = memory.allocate(kBatch);
    EXPECT_EQ(upstream->allocations, 7);
    for (void* block : blocks) memory.deallocate(block, kBatch);
  }
  // Its end gives back what it kept.
  EXPECT_EQ(upstream->outstanding, 0u);
  EXPECT_EQ(upstream->allocations, upstream->deallocations);
}

}  // namespace
}  // namespace conveyor::service::detail
