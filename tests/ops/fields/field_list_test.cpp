// A sample's fields as a list of types (conveyor/fields/field_list.h): issue 35's names refer to the sample's
// own inline fields through copies and moves, a kind of the user's own is added on first use and kept, empty,
// when the sample is recycled, and a sample without fields has nothing to show.
#include <gtest/gtest.h>

#include <utility>

#include "conveyor/sample.h"
#include "support/instance_marks.h"

namespace conveyor {
namespace {

using testing::InstanceMarks;

TEST(FieldList, TheOldNamesAreTheSamplesOwnFieldsThroughCopiesAndMoves) {
  Sample sample;
  sample.boxes.add({1, 2, 3, 4}, 7);
  sample.tags = {3};
  sample.encoded_mask = {1, 2};
  Sample copy = sample;
  copy.boxes.clear();
  copy.tags.push_back(4);
  EXPECT_EQ(sample.boxes.size(), 1u);
  EXPECT_EQ(sample.tags, std::vector<std::int64_t>{3});
  EXPECT_EQ(&copy.boxes, &copy.fields().boxes().list);
  EXPECT_EQ(copy.fields().tags().tags, (std::vector<std::int64_t>{3, 4}));
  Sample moved = std::move(copy);
  EXPECT_EQ(&moved.tags, &moved.fields().tags().tags);
  EXPECT_EQ(moved.encoded_mask, (std::vector<std::uint8_t>{1, 2}));
  // The moved-from sample is still whole: its names are its own, and it can be used again.
  copy.recycle();
  copy.boxes.add({0, 0, 1, 1}, 1);
  EXPECT_EQ(copy.fields().boxes().list.size(), 1u);
  EXPECT_EQ(moved.boxes.size(), 0u);
}

TEST(FieldList, AUsersKindIsAddedOnFirstUseCopiedWithTheSampleAndKeptWhenRecycled) {
  Sample sample;
  EXPECT_EQ(sample.find_field<InstanceMarks>(), nullptr);
  const std::size_t inline_fields = sample.fields().size();
  sample.field<InstanceMarks>().marks.push_back({1, 2, 3});
  EXPECT_EQ(sample.fields().size(), inline_fields + 1);
  EXPECT_EQ(sample.fields().find("marks"), sample.find_field<InstanceMarks>());
  EXPECT_TRUE(sample.fields().any());
  const Sample copy = sample;
  ASSERT_NE(copy.find_field<InstanceMarks>(), nullptr);
  EXPECT_NE(copy.find_field<InstanceMarks>(), sample.find_field<InstanceMarks>());
  EXPECT_EQ(copy.find_field<InstanceMarks>()->marks, sample.find_field<InstanceMarks>()->marks);
  InstanceMarks* kept = &sample.field<InstanceMarks>();
  sample.recycle();
  EXPECT_EQ(&sample.field<InstanceMarks>(), kept);  // the same object, emptied: no allocation next time
  EXPECT_TRUE(kept->empty());
  EXPECT_FALSE(sample.fields().any());
}

TEST(FieldList, PutReplacesAKindsFieldWithACopy) {
  Sample sample;
  InstanceMarks marks;
  marks.marks.push_back({5, 6, 1});
  sample.fields().put(marks);
  sample.fields().put(marks);
  EXPECT_EQ(sample.find_field<InstanceMarks>()->marks.size(), 1u);
  BoxesField boxes;
  boxes.list.add({0, 0, 2, 2}, 4);
  sample.fields().put(boxes);
  EXPECT_EQ(sample.boxes, boxes.list);
}

TEST(FieldList, ASampleWithoutFieldsHasNothingToShow) {
  const Sample sample;
  EXPECT_FALSE(sample.fields().any());
  for (std::size_t i = 0; i < sample.fields().size(); ++i) EXPECT_TRUE(sample.fields()[i].empty());
}

}  // namespace
}  // namespace conveyor
