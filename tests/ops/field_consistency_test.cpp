// Issue 35's consistency target: a box drawn into a mask stays that mask's bounding box (within 1 px) after
// every geometric op and chain, and the image under the mask still shows the rectangle that was drawn there;
// and issue 42's for keypoints: each visible keypoint stays on its rectangle (inside its mask's bounding box,
// within 1 px), instance by instance with the boxes, and "left" stays left of "right" through every flip.
// The scenes are real files: a JPEG with filled rectangles, its mask as a PNG, the rectangles as boxes, three
// keypoints on each.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops/sample_ops.h"
#include "support/scenes.h"

namespace conveyor::ops {
namespace {

constexpr int kCount = 6;

RandomResizedCropOptions scales_from(double scale_min) {
  RandomResizedCropOptions options;
  options.scale_min = scale_min;
  return options;
}

Sample sample_of(const testing::Scene& scene, std::uint64_t seed) {
  Sample sample;
  sample.encoded = scene.jpeg;
  sample.encoded_mask = scene.mask_png;
  sample.boxes.assign(scene.boxes);
  scene.add_keypoints(sample);
  sample.seed = seed;
  return sample;
}

void run(const std::vector<SampleOp>& chain, Sample& sample) {
  for (std::size_t i = 0; i < chain.size(); ++i) {
    sample.op_position = static_cast<std::uint32_t>(i);
    chain[i].apply(sample);
  }
}

// Every surviving box is its class's bounding box in the mask (within 1 px), a class without a box shows at
// most a sliver in the mask, and the image inside each box still has its rectangle's colour.
void expect_consistent(const testing::Scene& scene, const Sample& sample, const std::string& context,
                       bool same_colours) {
  const ConstMaskView mask = sample.mask();
  const ConstImageView image = sample.image();
  ASSERT_FALSE(mask.empty()) << context;
  ASSERT_EQ(mask.height, image.height) << context;
  ASSERT_EQ(mask.width, image.width) << context;
  std::set<std::int64_t> boxed;
  for (std::size_t i = 0; i < sample.boxes.size(); ++i) {
    const Box box = sample.boxes.boxes()[i];
    const std::int64_t cls = sample.boxes.classes()[i];
    boxed.insert(cls);
    EXPECT_GE(box.x0, 0) << context;
    EXPECT_LE(box.x1, image.width) << context;
    EXPECT_GE(box.y0, 0) << context;
    EXPECT_LE(box.y1, image.height) << context;
    const std::optional<Box> drawn = testing::mask_box(mask, static_cast<std::uint32_t>(cls));
    if (!drawn) {
      EXPECT_LT(box.area(), 4) << context << ": class " << cls << " has a box but no mask pixel";
      continue;
    }
    EXPECT_NEAR(drawn->x0, box.x0, 1.0) << context << ": class " << cls;
    EXPECT_NEAR(drawn->y0, box.y0, 1.0) << context << ": class " << cls;
    EXPECT_NEAR(drawn->x1, box.x1, 1.0) << context << ": class " << cls;
    EXPECT_NEAR(drawn->y1, box.y1, 1.0) << context << ": class " << cls;
    // The picture under the box, 2 px in from its edges: the rectangle's colour (JPEG and resizing blur
    // only the edges).
    const int x0 = static_cast<int>(std::ceil(box.x0)) + 2, x1 = static_cast<int>(std::floor(box.x1)) - 2;
    const int y0 = static_cast<int>(std::ceil(box.y0)) + 2, y1 = static_cast<int>(std::floor(box.y1)) - 2;
    if (!same_colours || x1 - x0 < 3 || y1 - y0 < 3) continue;
    const auto colour = scene.colour(cls);
    double diff = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x)
        for (int c = 0; c < 3; ++c) diff += std::abs(image.at(y, x)[c] - colour[static_cast<std::size_t>(c)]);
    EXPECT_LT(diff / ((x1 - x0) * (y1 - y0) * 3), 30)
        << context << ": class " << cls << " image off its mask";
  }
  // Keypoints: instance i is box i's rectangle (left, centre, right).
  const KeypointsField* keypoints = sample.find_field<KeypointsField>();
  ASSERT_NE(keypoints, nullptr) << context;
  ASSERT_EQ(keypoints->instances(), sample.boxes.size()) << context;
  for (std::size_t i = 0; i < keypoints->instances(); ++i) {
    const std::optional<Box> drawn =
        testing::mask_box(mask, static_cast<std::uint32_t>(sample.boxes.classes()[i]));
    const std::span<const Keypoint> points = keypoints->instance(i);
    for (const Keypoint& point : points) {
      if (point.v == 0) continue;
      EXPECT_GE(point.x, 0) << context;
      EXPECT_LE(point.x, image.width) << context;
      if (!drawn) continue;
      EXPECT_GE(point.x, drawn->x0 - 1.0) << context << ": instance " << i;
      EXPECT_LE(point.x, drawn->x1 + 1.0) << context << ": instance " << i;
      EXPECT_GE(point.y, drawn->y0 - 1.0) << context << ": instance " << i;
      EXPECT_LE(point.y, drawn->y1 + 1.0) << context << ": instance " << i;
    }
    if (points[0].v > 0 && points[2].v > 0) {
      EXPECT_LE(points[0].x, points[2].x) << context << ": left and right";
    }
  }
  for (std::size_t i = 0; i < scene.boxes.size(); ++i) {
    const std::int64_t cls = scene.boxes.classes()[i];
    if (boxed.contains(cls)) continue;
    const std::optional<Box> drawn = testing::mask_box(mask, static_cast<std::uint32_t>(cls));
    if (drawn) {
      EXPECT_LE(drawn->area(), 4) << context << ": class " << cls << " lost its box but not its mask";
    }
  }
}

// same_colours: the chain keeps the rectangles' colours (no colour op), so the image can be checked too.
void check_chain(const std::vector<SampleOp>& chain, const std::string& name, MaskType type = MaskType::uint8,
                 bool same_colours = true) {
  const testing::Scene scene = testing::make_scene(120, 160, kCount, 3, type);
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    Sample sample = sample_of(scene, seed);
    run(chain, sample);
    expect_consistent(scene, sample, name + " seed " + std::to_string(seed), same_colours);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(FieldConsistency, Decode) { check_chain({decode()}, "decode"); }

TEST(FieldConsistency, DecodeRandomResizedCrop) {
  check_chain({decode_random_resized_crop(64)}, "decode_random_resized_crop");
  check_chain({decode_random_resized_crop(200, scales_from(0.3))}, "decode_random_resized_crop up");
}

TEST(FieldConsistency, DecodeCenterCrop) { check_chain({decode_center_crop(48)}, "decode_center_crop"); }

TEST(FieldConsistency, RandomResizedCropOfDecodedPixels) {
  check_chain({decode(), random_resized_crop(40)}, "random_resized_crop");
}

TEST(FieldConsistency, RandomCropWithPadding) {
  check_chain({decode(), random_crop(100, 150, 12)}, "random_crop");
}

TEST(FieldConsistency, PadAndItsFill) {
  check_chain({decode(), pad(5, 7, 3, 9)}, "pad");
  const testing::Scene scene = testing::make_scene(40, 50, 2, 5);
  Sample sample = sample_of(scene, 1);
  run({decode(), pad(2, 0, 0, 0)}, sample);
  EXPECT_EQ(sample.mask().at(0, 0), 255u);  // FieldOptions::mask_fill's default
  const FieldOptions ignore_zero{.mask_fill = 0};
  Sample zero = sample_of(scene, 1);
  zero.set_field_options(&ignore_zero);
  run({decode(), pad(2, 0, 0, 0)}, zero);
  EXPECT_EQ(zero.mask().at(0, 0), 0u);
}

TEST(FieldConsistency, CropAndCenterCropReachingOutside) {
  check_chain({decode(), crop({-5, 10, 70, 50})}, "crop");
  check_chain({decode(), center_crop(200, 60)}, "center_crop larger");
  check_chain({decode(), center_crop(64, 64)}, "center_crop");
}

TEST(FieldConsistency, Resize) { check_chain({decode(), resize(33, 77)}, "resize"); }

TEST(FieldConsistency, Flips) {
  check_chain({decode(), flip_horizontal(1.0)}, "flip_horizontal");
  check_chain({decode(), flip_vertical(1.0)}, "flip_vertical");
  check_chain({decode_random_resized_crop(64), flip_horizontal(0.5)}, "rrc + flip");
}

TEST(FieldConsistency, TheStandardChainsAndALongOne) {
  check_chain({decode_random_resized_crop(64), flip_horizontal(0.5),
               distort({.brightness = 0.2, .contrast = 0.2, .saturation = 0.2})},
              "rrc + flip + distort", MaskType::uint8, /*same_colours=*/false);
  check_chain({decode_random_resized_crop(96, scales_from(0.3)), flip_horizontal(0.5), pad(4, 4, 4, 4),
               random_crop(96, 96), resize(64, 64), flip_vertical(0.5), center_crop(56, 56)},
              "long chain");
}

TEST(FieldConsistency, SixteenBitMasks) {
  check_chain({decode_random_resized_crop(64), flip_horizontal(0.5)}, "16-bit rrc + flip", MaskType::uint16);
  check_chain({decode(), pad(3, 3, 3, 3), random_crop(100, 100)}, "16-bit pad + crop", MaskType::uint16);
}

TEST(FieldConsistency, TheDecodedAndTheFusedRandomResizedCropDrawTheSameWindow) {
  const testing::Scene scene = testing::make_scene(120, 160, kCount, 8);
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    Sample fused = sample_of(scene, seed), plain = sample_of(scene, seed);
    fused.op_position = 1;  // the same position as the plain one's, after its decode
    decode_random_resized_crop(48).apply(fused);
    run({decode(), random_resized_crop(48)}, plain);
    EXPECT_EQ(fused.boxes, plain.boxes) << "seed " << seed;
  }
}

TEST(FieldConsistency, ColourOpsLeaveMasksAndBoxesAlone) {
  const testing::Scene scene = testing::make_scene(60, 80, 3, 2);
  Sample sample = sample_of(scene, 4);
  decode().apply(sample);
  const Mask before = [&] {
    Mask copy(sample.mask().shape());
    std::memcpy(copy.view().data, sample.mask().data, copy.shape().bytes());
    return copy;
  }();
  const BoxList boxes = sample.boxes;
  sample.op_position = 1;
  distort({.brightness = 0.5, .contrast = 0.5, .saturation = 0.5, .hue = 0.2}).apply(sample);
  EXPECT_EQ(std::memcmp(before.view().data, sample.mask().data, before.shape().bytes()), 0);
  EXPECT_EQ(sample.boxes, boxes);
}

TEST(FieldConsistency, AMaskOfAnotherSizeThanItsImageIsAnError) {
  const testing::Scene scene = testing::make_scene(60, 80, 2, 2);
  const testing::Scene other = testing::make_scene(60, 81, 2, 2);
  Sample sample = sample_of(scene, 1);
  sample.encoded_mask = other.mask_png;
  EXPECT_THROW(decode_random_resized_crop(32).apply(sample), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::ops
