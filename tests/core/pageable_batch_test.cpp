#include <gtest/gtest.h>

#include "conveyor/batch.h"
#include "conveyor/error.h"

namespace conveyor {
namespace {

TEST(PageableBatchBuffer, BatchSeesWhatWasWrittenIntoSlots) {
  PageableBatchBuffer buffer(4, {2, 3, 1});
  for (std::size_t i = 0; i < 4; ++i) {
    ImageView slot = buffer.slot(i);
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 3; ++x) slot.row(y)[x] = static_cast<std::uint8_t>(10 * i + 3 * y + x);
    buffer.labels()[i] = static_cast<std::int64_t>(i) + 100;
  }
  Batch batch = buffer.batch(3, /*sequence=*/7);
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_FALSE(batch.pinned());
  EXPECT_EQ(batch.sequence(), 7u);
  EXPECT_EQ(batch.pixels().size(), 3u * 6u);
  EXPECT_EQ(batch.image(2).row(1)[2], 10 * 2 + 3 + 2);
  EXPECT_EQ(batch.labels()[1], 101);
}

TEST(PageableBatchBuffer, BatchOutlivesTheBuffer) {
  Batch batch;
  {
    PageableBatchBuffer buffer(2, {1, 1, 3});
    buffer.slot(1).row(0)[2] = 42;
    batch = buffer.batch(2);
  }
  EXPECT_EQ(batch.image(1).row(0)[2], 42);
}

TEST(PageableBatchBuffer, RejectsBatchesOverCapacity) {
  PageableBatchBuffer buffer(2, {1, 1, 1});
  EXPECT_THROW(buffer.batch(3), InvalidArgument);
}

}  // namespace
}  // namespace conveyor
