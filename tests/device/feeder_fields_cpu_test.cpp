// Batches with masks, boxes and multi-hot labels through a DeviceFeeder on the CPU: the device batch shows
// the pipeline's fields; the default placement keeps a chain's flip in the pipeline when its samples have
// masks or boxes (the feeder flips images only), so that results do not depend on where they are made; and
// a feeder asked to flip such a batch itself refuses. Runs everywhere (the GPU twin: feeder_fields_gpu_test).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops/sample_ops.h"
#include "support/scenes.h"

namespace conveyor {
namespace {

constexpr ops::DistortOptions kJitter{.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1};

std::vector<SampleOp> chain() {
  return {ops::decode_random_resized_crop(32), ops::flip_horizontal(0.5), ops::distort(kJitter)};
}

BatchedDataset fields_dataset() {
  Dataset d = Dataset::from_source(testing::scene_source(9));
  for (const SampleOp& op : chain()) d = d.map(op);
  return d.with_options({.threads = 2}).batch(4, BatchOptions{.num_classes = 6});
}

std::vector<std::uint8_t> bytes_of(const TensorView& view) {
  const auto* p = static_cast<const std::uint8_t*>(view.data);
  return {p, p + view.bytes()};
}

TEST(FeederFields, ACpuFeedersBatchShowsThePipelinesFields) {
  DeviceFeeder feeder(resolve(DeviceSpec::parse("cpu")), {.depth = 2});
  std::vector<std::vector<std::uint8_t>> fed, plain;
  for (DeviceBatch& batch : feeder.feed(fields_dataset()))
    for (const TensorView* t : {&batch.masks(), &batch.boxes(), &batch.box_classes(), &batch.box_crowd(),
                                &batch.box_counts(), &batch.multi_hot()}) {
      ASSERT_TRUE(*t);
      fed.push_back(bytes_of(*t));
    }
  for (const Batch& batch : fields_dataset())
    for (const TensorView& t : {batch.mask_tensor(), batch.box_tensor(), batch.box_class_tensor(),
                                batch.box_crowd_tensor(), batch.box_count_tensor(), batch.multi_hot_tensor()})
      plain.push_back(bytes_of(t));
  EXPECT_EQ(fed, plain);
}

TEST(FeederFields, TheDefaultPlacementKeepsTheFlipOfSamplesWithFields) {
  const Placement gpu{
      .gpu = true, .device = 0, .description = "gpu:0 (for the placement rule only)", .reason = ""};
  FeederOptions with_fields{.normalize = ops::NormalizeParams{}};
  const BatchedDataset placed = place_pixel_ops(fields_dataset(), gpu, with_fields);
  EXPECT_TRUE(with_fields.augment.distort.has_value());
  EXPECT_FALSE(with_fields.augment.flip_horizontal.has_value());
  ASSERT_TRUE(placed.samples().last_map());
  EXPECT_EQ(placed.samples().last_map()->op.name, "flip_horizontal");

  FeederOptions plain{.normalize = ops::NormalizeParams{}};
  const std::vector<SampleOp> left = place_pixel_ops(chain(), gpu, plain);
  EXPECT_EQ(left.size(), 1u);  // classification: both moved, as before
  EXPECT_TRUE(plain.augment.flip_horizontal.has_value());
  FeederOptions fields_too{.normalize = ops::NormalizeParams{}};
  EXPECT_EQ(place_pixel_ops(chain(), gpu, fields_too, FieldSet{.mask = true}).size(), 2u);
}

TEST(FeederFields, AFeederAskedToFlipABatchWithFieldsRefuses) {
  FeederOptions options{.depth = 2, .normalize = ops::NormalizeParams{}};
  options.augment.flip_horizontal = 0.5;
  DeviceFeeder feeder(resolve(DeviceSpec::parse("cpu")), options);
  BatchIterator it = fields_dataset().begin();
  std::optional<Batch> batch = it.next();
  ASSERT_TRUE(batch);
  EXPECT_THROW(feeder.stage(std::move(*batch)), InvalidArgument);
}

}  // namespace
}  // namespace conveyor
