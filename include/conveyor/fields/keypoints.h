// Keypoints as a field (COCO's person keypoints, facial landmarks, ...): per instance, K points of (x, y, v),
// v being COCO's visibility (0: not labelled, or not in the picture; 1: labelled but hidden; 2: visible).
// Coordinates are continuous pixel coordinates of the current image, as the boxes' are (COCO's values are
// taken as they are).
//
// Geometry: every point is mapped as the image is (a window: (x - window.x) * out_width / window.width; a
// mirror: x -> width - x). A point that leaves the output (outside [0, width] x [0, height]) gets v = 0 and
// keeps the coordinates the change gave it, outside the picture, as torchvision's KeyPoints and detectron2
// leave them: v = 0 says to ignore it, and it stays 0 (what a later pad or crop shows there is not the
// point). A left-right mirror also swaps the points named left and right (flip_indices: COCO's "left_eye"
// <-> "right_eye"), so that "left" names what looks like the person's left in the new picture; a top-bottom
// mirror keeps the names. Both as detectron2 and torchvision's detection references do (they count left-right
// flips only; an upside-down person is rare in training data, and an op of your own may permute the points).
// Instances are the boxes' instances: a box that a change drops (it left the picture) drops its keypoints
// too.
//
// Batches: "keypoints" (N, M, K, 3) float32, zeros (v = 0) past each sample's instances, and
// "keypoint_counts" (N) int64; M is the batch's most instances, or BatchOptions::max_boxes as for the boxes
// (a sample with more fails), so that keypoints[n, m] belongs to boxes[n, m].
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/fields/field.h"

namespace conveyor {

struct Keypoint {
  float x = 0;
  float y = 0;
  float v = 0;  // 0, 1 or 2 (COCO's visibility)
  friend bool operator==(const Keypoint&, const Keypoint&) = default;
};
// Batches lay keypoints out as float [..., 3] tensors.
static_assert(sizeof(Keypoint) == 3 * sizeof(float));

class KeypointsField final : public Field {
 public:
  static constexpr std::string_view kName = "keypoints";

  // K, the points of one instance: the same for every sample of a data set (COCO: its category's names).
  int points = 0;
  // instances() * points entries, instance after instance.
  std::vector<Keypoint> values;
  // What a left-right mirror does to an instance's points: point k takes the place of point flip_indices[k]
  // (a permutation of 0..K-1; null: the points keep their places). flip_indices_by_name makes one.
  std::shared_ptr<const std::vector<int>> flip_indices;

  // Appends one instance of `points` keypoints; throws InvalidArgument for another count.
  void add_instance(std::span<const Keypoint> instance);
  std::span<const Keypoint> instance(std::size_t i) const noexcept {
    return {values.data() + i * static_cast<std::size_t>(points), static_cast<std::size_t>(points)};
  }

  std::string_view name() const noexcept override { return kName; }
  bool empty() const noexcept override { return values.empty(); }
  void clear() noexcept override { values.clear(); }
  std::unique_ptr<Field> clone() const override { return std::make_unique<KeypointsField>(*this); }
  void check_read() const override;
  void move(const ops::GeometryChange& change, FieldMove& context) override;
  std::size_t instances() const noexcept override {
    return points > 0 ? values.size() / static_cast<std::size_t>(points) : 0;
  }
  void keep_instances(std::span<const std::uint8_t> keep) override;
  std::unique_ptr<FieldBatch> make_batch(const FieldBatchLayout& layout,
                                         std::span<std::byte> fixed) const override;
  void tensors(std::vector<BatchTensor>& out) const override;
};

// The mirror permutation of points named `names`: a name with "left" in it (any case) and the one with
// "right" in its place swap ("left_eye" <-> "right_eye", "LeftHand" <-> "RightHand"); every other point
// stays.
std::vector<int> flip_indices_by_name(std::span<const std::string> names);

}  // namespace conveyor
