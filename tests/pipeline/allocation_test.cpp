// A warm pipeline allocates nothing per sample: elements, their scratch images and the batch buffers
// are all reused. This program replaces the global operator new to count allocations, so it is a
// program of its own.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "conveyor/dataset.h"
#include "fixtures.h"

namespace {
std::atomic<std::size_t> allocations{0};  // every operator new in this program
}  // namespace

// The replacement operators are the one place where raw allocation is the point.
// NOLINTBEGIN(cppcoreguidelines-no-malloc,cppcoreguidelines-owning-memory)
void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// NOLINTEND(cppcoreguidelines-no-malloc,cppcoreguidelines-owning-memory)

namespace conveyor {
namespace {

TEST(Allocations, AWarmPipelineAllocatesNothingPerSample) {
  BatchIterator it = testing::numbered_memory(4000)
                         .shuffle(500, 1)
                         .map(testing::fill_from_seed({8, 8, 3}))
                         .map(testing::negate_into_new_image())  // scratch image, copied into the slot
                         .with_options({.threads = 2})
                         .batch(50)
                         .begin();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(it.next());  // warm-up: pool buffers, element scratch, queue
  const std::size_t before = allocations.load();
  std::size_t elements = 0;
  for (int i = 0; i < 40; ++i) elements += it.next()->size();
  const std::size_t during = allocations.load() - before;
  EXPECT_EQ(elements, 2000u);
  // Per batch, the Batch's shared_ptr control block; nothing per element.
  EXPECT_LE(during, 2 * 40u) << during << " allocations for " << elements << " elements";
}

}  // namespace
}  // namespace conveyor
