// What a window does to masks and boxes: nearest neighbour only (no class id is ever blended), the fill for
// made-up pixels, box corners mapped, clipped, and dropped below the thresholds with their classes.
#include "conveyor/ops/field_geometry.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "conveyor/error.h"

namespace conveyor::ops {
namespace {

Mask numbered(int height, int width, MaskType type) {
  Mask mask({height, width, type});
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const std::uint16_t value =
          static_cast<std::uint16_t>(type == MaskType::uint16 ? 300 + y * width + x : (y * width + x) % 200);
      if (type == MaskType::uint16) {
        std::memcpy(mask.view().row(y) + 2 * x, &value, 2);
      } else {
        mask.view().row(y)[x] = static_cast<std::uint8_t>(value);
      }
    }
  return mask;
}

TEST(FieldGeometry, ResizedMasksOnlyHoldIdsTheSourceHas) {
  for (MaskType type : {MaskType::uint8, MaskType::uint16}) {
    const Mask mask = numbered(30, 40, type);
    std::set<std::uint32_t> source;
    for (int y = 0; y < 30; ++y)
      for (int x = 0; x < 40; ++x) source.insert(mask.view().at(y, x));
    for (const auto& [h, w] : {std::pair{17, 23}, std::pair{90, 77}}) {
      Mask out({h, w, type});
      crop_resize_mask(mask.view(), {3, 5, 31, 20}, out.view());
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) ASSERT_TRUE(source.contains(out.view().at(y, x))) << y << "," << x;
    }
  }
}

TEST(FieldGeometry, NearestNeighbourTakesThePixelUnderEachOutputCentre) {
  const Mask mask = numbered(10, 10, MaskType::uint16);
  Mask out({3, 3, MaskType::uint16});
  // 3x down: output pixel x covers source [1 + 3x, 4 + 3x), whose centre lies in pixel 1 + 3x + 1.
  crop_resize_mask(mask.view(), {1, 1, 9, 9}, out.view());
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 3; ++x) EXPECT_EQ(out.view().at(y, x), mask.view().at(2 + 3 * y, 2 + 3 * x));
}

TEST(FieldGeometry, PaddedMaskPixelsTakeTheFillUnderConstantPadding) {
  const Mask mask = numbered(4, 4, MaskType::uint8);
  Mask out({6, 6, MaskType::uint8});
  crop_resize_mask(mask.view(), {-1, -1, 6, 6}, out.view(), PadMode::constant, 255);
  EXPECT_EQ(out.view().at(0, 0), 255u);
  EXPECT_EQ(out.view().at(5, 3), 255u);
  EXPECT_EQ(out.view().at(1, 1), mask.view().at(0, 0));
  crop_resize_mask(mask.view(), {-1, 0, 6, 6}, out.view(), PadMode::edge, 255);
  EXPECT_EQ(out.view().at(0, 0), mask.view().at(0, 0));  // repeated, not filled
  Mask wide = numbered(4, 4, MaskType::uint16);
  Mask wide_out({6, 6, MaskType::uint16});
  crop_resize_mask(wide.view(), {-1, -1, 6, 6}, wide_out.view(), PadMode::constant, 60000);
  EXPECT_EQ(wide_out.view().at(0, 0), 60000u);
  EXPECT_THROW(crop_resize_mask(mask.view(), {-1, -1, 6, 6}, out.view(), PadMode::constant, 300),
               InvalidArgument);
}

TEST(FieldGeometry, BoxesMapClipAndDropWithTheirClasses) {
  BoxList boxes;
  boxes.add({10, 10, 30, 30}, 1);         // inside
  boxes.add({-10, 40, 10, 60}, 2, true);  // half outside on the left
  boxes.add({200, 200, 210, 210}, 3);     // outside
  crop_resize_boxes(boxes, {0, 0, 100, 100}, 50, 50, FieldOptions{});
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes.boxes()[0], (Box{5, 5, 15, 15}));
  EXPECT_EQ(boxes.boxes()[1], (Box{0, 20, 5, 30}));
  EXPECT_EQ(boxes.classes()[1], 2);
  EXPECT_EQ(boxes.crowd()[1], 1);

  BoxList visible;
  visible.add({-10, 0, 10, 10}, 1);  // half of it stays
  visible.add({-15, 0, 5, 10}, 2);   // a quarter stays
  crop_resize_boxes(visible, {0, 0, 100, 100}, 100, 100, FieldOptions{.min_box_visibility = 0.4});
  ASSERT_EQ(visible.size(), 1u);
  EXPECT_EQ(visible.classes()[0], 1);

  BoxList small;
  small.add({0, 0, 4, 4}, 1);  // 16 px before, 1 after a 4x shrink
  small.add({0, 0, 8, 8}, 2);  // 4 px after
  crop_resize_boxes(small, {0, 0, 100, 100}, 25, 25, FieldOptions{.min_box_area = 2});
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small.classes()[0], 2);
}

TEST(FieldGeometry, FlipsMirrorBoxesAndMasks) {
  BoxList boxes;
  boxes.add({1, 2, 4, 8}, 7);
  flip_boxes_horizontal(boxes, 10);
  EXPECT_EQ(boxes.boxes()[0], (Box{6, 2, 9, 8}));
  flip_boxes_vertical(boxes, 20);
  EXPECT_EQ(boxes.boxes()[0], (Box{6, 12, 9, 18}));
  Mask mask = numbered(3, 5, MaskType::uint16);
  const Mask original = numbered(3, 5, MaskType::uint16);
  flip_mask_horizontal(mask.view());
  EXPECT_EQ(mask.view().at(1, 0), original.view().at(1, 4));
  flip_mask_vertical(mask.view());
  EXPECT_EQ(mask.view().at(0, 0), original.view().at(2, 4));
}

}  // namespace
}  // namespace conveyor::ops
