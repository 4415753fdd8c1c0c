// Keypoints in batches: (N, M, K, 3) float32 beside the boxes, M the boxes' M (the batch's most instances, or
// BatchOptions::max_boxes), zeros (v = 0) past each sample's instances, counts equal to the boxes' counts,
// and every visible point inside its own instance's box after the chain (instance m of keypoints is box m).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/fields/keypoints.h"
#include "conveyor/ops/sample_ops.h"
#include "support/scenes.h"

namespace conveyor {
namespace {

constexpr int kSize = 32;

// Scenes with 1 + i % 4 rectangles, each with its three keypoints (left, centre, right).
class KeypointScenes final : public SampleSource {
 public:
  explicit KeypointScenes(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
      scenes_.push_back(testing::make_scene(60, 80, 1 + static_cast<int>(i % 4), i + 3));
  }
  std::size_t size() const override { return scenes_.size(); }
  void read(std::size_t i, Sample& sample, const ReadLimits&) const override {
    sample.path = "scene " + std::to_string(i);
    sample.label = static_cast<std::int64_t>(i);
    sample.encoded = scenes_[i].jpeg;
    sample.boxes.assign(scenes_[i].boxes);
    scenes_[i].add_keypoints(sample);
  }
  FieldSet fields() const override {
    auto keypoints = std::make_shared<KeypointsField>();
    keypoints->points = 3;
    return {.boxes = true, .others = {keypoints}};
  }
  std::string describe() const override { return "keypoint scenes " + std::to_string(scenes_.size()); }

 private:
  std::vector<testing::Scene> scenes_;
};

BatchedDataset keypoint_batches(std::size_t count, const BatchOptions& options = {}) {
  ops::RandomResizedCropOptions crop;
  crop.scale_min = 0.3;  // windows large enough that most rectangles stay
  return Dataset::from_source(std::make_shared<KeypointScenes>(count))
      .map(ops::decode_random_resized_crop(kSize, crop))
      .map(ops::flip_horizontal(0.5))
      .with_options({.threads = 2, .seed = 4})
      .batch(4, options);
}

void expect_beside_the_boxes(const Batch& batch) {
  const TensorView keypoints = batch.field_tensor("keypoints");
  const TensorView counts = batch.field_tensor("keypoint_counts");
  ASSERT_TRUE(keypoints);
  ASSERT_EQ(keypoints.ndim, 4);
  EXPECT_EQ(keypoints.dtype, DType::float32);
  EXPECT_EQ(keypoints.shape[1], static_cast<std::int64_t>(batch.max_boxes()));
  EXPECT_EQ(keypoints.shape[2], 3);
  EXPECT_EQ(keypoints.shape[3], 3);
  const auto m = static_cast<std::size_t>(keypoints.shape[1]);
  for (std::size_t k = 0; k < batch.size(); ++k) {
    const std::span<const Box> boxes = batch.boxes(k);
    ASSERT_EQ(static_cast<std::size_t>(counts.as<std::int64_t>()[k]), boxes.size());
    const float* sample = keypoints.as<float>() + k * m * 9;
    for (std::size_t b = 0; b < m; ++b)
      for (std::size_t p = 0; p < 3; ++p) {
        const float* point = sample + (b * 3 + p) * 3;
        if (b >= boxes.size()) {
          EXPECT_EQ(point[2], 0.f) << "padding";
          continue;
        }
        if (point[2] == 0) continue;
        EXPECT_GE(point[0], boxes[b].x0 - 1e-3) << "sample " << k << " instance " << b;
        EXPECT_LE(point[0], boxes[b].x1 + 1e-3) << "sample " << k << " instance " << b;
        EXPECT_GE(point[1], boxes[b].y0 - 1e-3) << "sample " << k << " instance " << b;
        EXPECT_LE(point[1], boxes[b].y1 + 1e-3) << "sample " << k << " instance " << b;
      }
  }
}

TEST(KeypointBatches, ArePaddedBesideTheBoxesAndStayInTheirInstancesBoxes) {
  std::size_t seen = 0;
  for (const Batch& batch : keypoint_batches(11)) {
    expect_beside_the_boxes(batch);
    seen += batch.size();
  }
  EXPECT_EQ(seen, 11u);
}

TEST(KeypointBatches, AFixedMaxBoxesFixesTheirMToo) {
  for (const Batch& batch : keypoint_batches(8, {.max_boxes = 6})) {
    EXPECT_EQ(batch.field_tensor("keypoints").shape[1], 6);
    expect_beside_the_boxes(batch);
  }
}

TEST(KeypointBatches, ListThemselvesWithTheirPadding) {
  BatchIterator it = keypoint_batches(4).begin();
  const std::optional<Batch> batch = it.next();
  ASSERT_TRUE(batch);
  const BatchTensor* keypoints = batch->field("keypoints");
  ASSERT_NE(keypoints, nullptr);
  EXPECT_EQ(keypoints->field, "keypoints");
  EXPECT_EQ(keypoints->padding.dim, 1);
  EXPECT_EQ(keypoints->padding.counts, "keypoint_counts");
  EXPECT_TRUE(keypoints->follows_geometry);
}

}  // namespace
}  // namespace conveyor
