// Fixtures for samples with fields: a picture with filled rectangles drawn in solid colours, the mask
// that labels each rectangle with its class, and the rectangles as boxes, as real JPEG and PNG bytes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "conveyor/boxes.h"
#include "conveyor/fields/keypoints.h"
#include "conveyor/image.h"
#include "conveyor/mask.h"
#include "conveyor/sample.h"
#include "conveyor/source.h"

namespace conveyor::testing {

struct Scene {
  Image image;                         // RGB
  Mask mask;                           // 0 background, 1..count the rectangles (class c: rectangle c - 1)
  BoxList boxes;                       // rectangle c - 1 as the box of class c, in pixel corners
  std::vector<std::uint8_t> jpeg;      // the image, quality 95, 4:4:4
  std::vector<std::uint8_t> mask_png;  // the mask
  // Per rectangle, in the boxes' order: the centres of its left column, of itself and of its right column,
  // all on the rectangle's mask pixels (points "left", "centre", "right").
  std::vector<Keypoint> keypoints;
  std::array<std::uint8_t, 3> colour(std::int64_t cls) const;  // the fill of class cls's rectangle
  // The scene's keypoints as the sample's keypoints field (a mirror swaps "left" and "right").
  void add_keypoints(Sample& sample) const;
};

// `count` rectangles (at least 8 x 8 pixels, not overlapping: one per cell of a grid) over a make_picture
// background. A uint16 mask numbers the classes 1000 + c - 1 instead (values above 255).
Scene make_scene(int height, int width, int count, std::uint64_t seed, MaskType type = MaskType::uint8);

// The smallest box around the pixels of `mask` equal to `value` (pixel corners), or nullopt.
std::optional<Box> mask_box(ConstMaskView mask, std::uint32_t value);

// A SampleSource of `count` scenes in memory: element i is make_scene(height, width, 1 + i % 4, i + 1) (so
// batches differ in their most boxes), with label i and tags {i % 3, 5}.
std::shared_ptr<const SampleSource> scene_source(std::size_t count, int height = 40, int width = 50);

}  // namespace conveyor::testing
