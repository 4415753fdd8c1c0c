#include "conveyor/sample.h"

#include <gtest/gtest.h>

#include <vector>

#include "conveyor/error.h"

namespace conveyor {
namespace {

TEST(Sample, OutputGoesToTheSlotWhenTheShapeMatches) {
  std::vector<std::uint8_t> slot_memory(4 * 4 * 3);
  Sample sample;
  sample.bind_slot(ImageView(slot_memory.data(), {4, 4, 3}));
  ImageView out = sample.output({4, 4, 3});
  EXPECT_EQ(out.data, slot_memory.data());
  sample.publish();
  EXPECT_TRUE(sample.in_slot());
  EXPECT_EQ(sample.image().data, slot_memory.data());
}

TEST(Sample, OutputUsesScratchWhenTheShapeDiffers) {
  std::vector<std::uint8_t> slot_memory(4 * 4 * 3);
  Sample sample;
  sample.bind_slot(ImageView(slot_memory.data(), {4, 4, 3}));
  ImageView out = sample.output({8, 8, 3});
  EXPECT_NE(out.data, slot_memory.data());
  sample.publish();
  EXPECT_FALSE(sample.in_slot());
  EXPECT_EQ(sample.image().shape(), (ImageShape{8, 8, 3}));
}

TEST(Sample, AnOpReadingTheSlotWritesElsewhere) {
  std::vector<std::uint8_t> slot_memory(4 * 4 * 3);
  Sample sample;
  sample.bind_slot(ImageView(slot_memory.data(), {4, 4, 3}));
  sample.output({4, 4, 3});
  sample.publish();
  ImageView out = sample.output({4, 4, 3});
  EXPECT_NE(out.data, sample.image().data);
}

TEST(Sample, ConsecutiveOutputsAlternateScratchBuffers) {
  Sample sample;
  ImageView first = sample.output({2, 2, 1});
  sample.publish();
  ImageView second = sample.output({2, 2, 1});
  EXPECT_NE(first.data, second.data);
  EXPECT_EQ(sample.image().data, first.data);
}

TEST(Sample, PublishWithoutOutputIsAnError) {
  Sample sample;
  EXPECT_THROW(sample.publish(), InvalidArgument);
}

TEST(Sample, RecycleForgetsPixelsAndIdentity) {
  Sample sample;
  sample.path = "a.jpg";
  sample.label = 3;
  sample.output({2, 2, 1});
  sample.publish();
  sample.recycle();
  EXPECT_TRUE(sample.image().empty());
  EXPECT_TRUE(sample.path.empty());
  EXPECT_EQ(sample.label, -1);
}

}  // namespace
}  // namespace conveyor
