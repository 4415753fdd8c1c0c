// The one geometry call (conveyor/ops/apply_geometry.h): a user's own geometric op, written with it, moves a
// sample's image, mask, boxes and a field type of the user's own exactly as the library's ops move theirs;
// instances dropped by the boxes leave every per-instance field; a change that does not fit is refused before
// anything moves; the identity moves nothing. Real files: a JPEG of filled rectangles and its PNG mask.
#include "conveyor/ops/apply_geometry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "conveyor/error.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/field_geometry.h"
#include "conveyor/ops/resize.h"
#include "conveyor/ops/sample_ops.h"
#include "support/instance_marks.h"
#include "support/scenes.h"

namespace conveyor::ops {
namespace {

using testing::InstanceMarks;

constexpr std::uint64_t kZoomStream = 0x7a6f6f6d'00000001;

// A user's op, as a user writes it: a random window of 60-100 % of each side, at a random place, resized back
// to the image's size; one draw, every field moved with it.
SampleOp random_zoom() {
  return {"random_zoom", [](Sample& sample) {
            const ConstImageView image = sample.image();
            Rng rng = sample.rng(kZoomStream);
            const int width = static_cast<int>(image.width * (0.6 + 0.4 * rng.uniform()));
            const int height = static_cast<int>(image.height * (0.6 + 0.4 * rng.uniform()));
            const int x = static_cast<int>(rng.uniform() * (image.width - width + 1));
            const int y = static_cast<int>(rng.uniform() * (image.height - height + 1));
            apply_geometry(sample,
                           GeometryChange::crop_resize(image.height, image.width, {x, y, width, height},
                                                       image.height, image.width));
          }};
}

// A decoded scene with a mark per rectangle at its box's top-left corner, the mark's id its box's class.
Sample decoded_scene(const testing::Scene& scene, std::uint64_t seed) {
  Sample sample;
  sample.encoded = scene.jpeg;
  sample.encoded_mask = scene.mask_png;
  sample.boxes.assign(scene.boxes);
  for (std::size_t i = 0; i < scene.boxes.size(); ++i) {
    const Box box = scene.boxes.boxes()[i];
    sample.field<InstanceMarks>().marks.push_back(
        {box.x0, box.y0, static_cast<float>(scene.boxes.classes()[i])});
  }
  sample.seed = seed;
  decode().apply(sample);
  sample.op_position = 1;
  return sample;
}

TEST(ApplyGeometry, AUsersOpMovesImageMaskAndBoxesAsTheLibrarysKernelsDo) {
  const testing::Scene scene = testing::make_scene(90, 120, 5, 3);
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    Sample sample = decoded_scene(scene, seed);
    const Sample before = sample;
    random_zoom().apply(sample);
    // The window the op drew, drawn again: the reference is the library's kernels on it.
    Rng rng = before.rng(kZoomStream);
    const int width = static_cast<int>(120 * (0.6 + 0.4 * rng.uniform()));
    const int height = static_cast<int>(90 * (0.6 + 0.4 * rng.uniform()));
    const int x = static_cast<int>(rng.uniform() * (120 - width + 1));
    const int y = static_cast<int>(rng.uniform() * (90 - height + 1));
    const Rect window{x, y, width, height};
    Image image(90, 120, 3);
    resize(crop(before.image(), window), image.view());
    ASSERT_EQ(sample.image().shape(), image.shape());
    for (int row = 0; row < 90; ++row)
      ASSERT_EQ(std::memcmp(sample.image().row(row), image.view().row(row), 120 * 3), 0) << "seed " << seed;
    Mask mask({90, 120, MaskType::uint8});
    crop_resize_mask(before.mask(), window, mask.view());
    ASSERT_EQ(std::memcmp(sample.mask().data, mask.view().data, mask.shape().bytes()), 0) << "seed " << seed;
    BoxList boxes = before.boxes;
    crop_resize_boxes(boxes, window, 120, 90, FieldOptions{});
    EXPECT_EQ(sample.boxes, boxes) << "seed " << seed;
  }
}

TEST(ApplyGeometry, AUsersFieldTypeFollowsEveryChangeAndStaysAlignedWithTheBoxes) {
  const testing::Scene scene = testing::make_scene(90, 120, 6, 9);
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    Sample sample = decoded_scene(scene, seed);
    random_zoom().apply(sample);
    sample.op_position = 2;
    flip_horizontal(1.0).apply(sample);
    const auto& marks = sample.find_field<InstanceMarks>()->marks;
    // Boxes that left the picture took their marks with them: ids still match the boxes' classes, in order.
    ASSERT_EQ(marks.size(), sample.boxes.size()) << "seed " << seed;
    for (std::size_t i = 0; i < marks.size(); ++i) {
      EXPECT_EQ(static_cast<std::int64_t>(marks[i][2]), sample.boxes.classes()[i]) << "seed " << seed;
      // Mirrored: the box's top-left corner became its top-right one (where the box was not clipped).
      const Box box = sample.boxes.boxes()[i];
      if (box.x1 < 120.f && box.y0 > 0.f) {
        EXPECT_NEAR(marks[i][0], box.x1, 1e-3) << "seed " << seed;
        EXPECT_NEAR(marks[i][1], box.y0, 1e-3) << "seed " << seed;
      }
    }
  }
}

TEST(ApplyGeometry, AWindowThatDropsBoxesDropsTheirInstancesEverywhere) {
  const testing::Scene scene = testing::make_scene(90, 120, 6, 4);
  Sample sample = decoded_scene(scene, 0);
  // The left half only: the boxes right of it go, with their marks.
  apply_geometry(sample, GeometryChange::crop(90, 120, {0, 0, 60, 90}));
  std::size_t left = 0;
  for (const Box& box : scene.boxes.boxes()) left += box.x0 < 60 ? 1 : 0;
  ASSERT_GT(left, 0u);
  ASSERT_LT(left, scene.boxes.size());
  EXPECT_EQ(sample.boxes.size(), left);
  ASSERT_EQ(sample.find_field<InstanceMarks>()->marks.size(), left);
  for (std::size_t i = 0; i < left; ++i)
    EXPECT_EQ(static_cast<std::int64_t>(sample.find_field<InstanceMarks>()->marks[i][2]),
              sample.boxes.classes()[i]);
}

TEST(ApplyGeometry, AChangeThatDoesNotFitIsRefusedBeforeAnythingMoves) {
  const testing::Scene scene = testing::make_scene(60, 80, 3, 1);
  Sample sample = decoded_scene(scene, 0);
  const BoxList boxes = sample.boxes;
  // Drawn for another image size.
  EXPECT_THROW(apply_geometry(sample, GeometryChange::crop(61, 80, {0, 0, 40, 40})), InvalidArgument);
  // A resized window that reaches outside the image.
  EXPECT_THROW(apply_geometry(sample, GeometryChange::crop_resize(60, 80, {-5, 0, 40, 40}, 20, 20)),
               InvalidArgument);
  // An empty window.
  EXPECT_THROW(apply_geometry(sample, GeometryChange::crop(60, 80, {0, 0, 0, 10})), InvalidArgument);
  EXPECT_EQ(sample.image().shape(), (ImageShape{60, 80, 3}));
  EXPECT_EQ(sample.mask().shape(), (MaskShape{60, 80, MaskType::uint8}));
  EXPECT_EQ(sample.boxes, boxes);
  Sample empty;
  EXPECT_THROW(apply_geometry(empty, GeometryChange::mirror(60, 80, true)), InvalidArgument);
}

TEST(ApplyGeometry, AMaskStillEncodedMustBeDecodedWithTheImage) {
  const testing::Scene scene = testing::make_scene(60, 80, 3, 1);
  Sample sample;
  sample.encoded = scene.jpeg;
  decode().apply(sample);
  sample.encoded_mask = scene.mask_png;  // given after the decode: nobody decoded it
  EXPECT_THROW(apply_geometry(sample, GeometryChange::mirror(60, 80, true)), InvalidArgument);
}

TEST(ApplyGeometry, TheIdentityMovesNothingAndPaddingMovesEverythingBy) {
  const testing::Scene scene = testing::make_scene(60, 80, 3, 2);
  Sample sample = decoded_scene(scene, 0);
  sample.boxes.add({70, 50, 90, 70}, 9);  // partly outside: the identity leaves it as it is
  sample.field<InstanceMarks>().marks.push_back({70, 50, 9});
  const BoxList boxes = sample.boxes;
  apply_geometry(sample, GeometryChange::crop(60, 80, {0, 0, 80, 60}));
  EXPECT_EQ(sample.boxes, boxes);
  apply_geometry(sample, GeometryChange::pad_by(60, 80, 3, 0, 5, 0));
  ASSERT_EQ(sample.boxes.size(), boxes.size());
  EXPECT_FLOAT_EQ(sample.boxes.boxes()[0].x0, boxes.boxes()[0].x0 + 5);
  EXPECT_FLOAT_EQ(sample.boxes.boxes()[0].y0, boxes.boxes()[0].y0 + 3);
  EXPECT_FLOAT_EQ(sample.find_field<InstanceMarks>()->marks[0][0], scene.boxes.boxes()[0].x0 + 5);
  EXPECT_EQ(sample.mask().at(0, 0), 255u);  // made up by the pad: FieldOptions::mask_fill
}

TEST(ApplyGeometry, ColourOpsLeaveAUsersFieldAlone) {
  const testing::Scene scene = testing::make_scene(60, 80, 3, 2);
  Sample sample = decoded_scene(scene, 0);
  const auto marks = sample.find_field<InstanceMarks>()->marks;
  distort({.brightness = 0.5, .contrast = 0.5}).apply(sample);
  EXPECT_EQ(sample.find_field<InstanceMarks>()->marks, marks);
}

}  // namespace
}  // namespace conveyor::ops
