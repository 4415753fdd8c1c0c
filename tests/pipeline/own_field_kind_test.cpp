// A field kind of the user's own (tests/support/instance_marks.h: a mark per instance, aligned with the
// boxes) goes through the whole pipeline without the library naming it: a source declares it
// (FieldSet::others), geometric ops move it, the batch stage and the assembler carry it through compaction
// and padding, batches list its tensors with their padding beside the built-in ones, and a feeder hands them
// on by name.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "support/instance_marks.h"
#include "support/scenes.h"

namespace conveyor {
namespace {

using testing::InstanceMarks;

constexpr int kSize = 24;

// Scenes with 1 + i % 4 rectangles; each box has a mark at its top-left corner whose id is the box's class.
class MarkedScenes final : public SampleSource {
 public:
  explicit MarkedScenes(std::size_t count, bool declare = true) : declare_(declare) {
    for (std::size_t i = 0; i < count; ++i)
      scenes_.push_back(testing::make_scene(40, 50, 1 + static_cast<int>(i % 4), i + 1));
  }
  std::size_t size() const override { return scenes_.size(); }
  void read(std::size_t i, Sample& sample, const ReadLimits&) const override {
    sample.path = "marked " + std::to_string(i);
    sample.label = static_cast<std::int64_t>(i);
    sample.encoded = scenes_[i].jpeg;
    sample.boxes.assign(scenes_[i].boxes);
    auto& marks = sample.field<InstanceMarks>().marks;
    for (std::size_t b = 0; b < scenes_[i].boxes.size(); ++b) {
      const Box box = scenes_[i].boxes.boxes()[b];
      marks.push_back({box.x0, box.y0, static_cast<float>(scenes_[i].boxes.classes()[b])});
    }
  }
  FieldSet fields() const override {
    FieldSet set{.boxes = true};
    if (declare_) set.others.push_back(std::make_shared<InstanceMarks>());
    return set;
  }
  std::string describe() const override { return "marked scenes " + std::to_string(scenes_.size()); }

 private:
  std::vector<testing::Scene> scenes_;
  bool declare_;
};

Dataset marked(std::size_t count, bool declare = true) {
  return Dataset::from_source(std::make_shared<MarkedScenes>(count, declare))
      .map(ops::decode_random_resized_crop(kSize))
      .map(ops::flip_horizontal(0.5));
}

// Every sample's marks are its boxes' instances: as many, ids equal to the classes, in order.
void expect_aligned(const Batch& batch) {
  const BatchTensor* marks = batch.field("marks");
  const BatchTensor* counts = batch.field("mark_counts");
  ASSERT_NE(marks, nullptr);
  ASSERT_NE(counts, nullptr);
  const auto m = static_cast<std::size_t>(marks->view.shape[1]);
  for (std::size_t k = 0; k < batch.size(); ++k) {
    const std::span<const std::int64_t> classes = batch.box_classes(k);
    ASSERT_EQ(static_cast<std::size_t>(counts->view.as<std::int64_t>()[k]), classes.size()) << "sample " << k;
    for (std::size_t b = 0; b < classes.size(); ++b)
      EXPECT_EQ(static_cast<std::int64_t>(marks->view.as<float>()[(k * m + b) * 3 + 2]), classes[b])
          << "sample " << k;
    for (std::size_t b = classes.size(); b < m; ++b)
      EXPECT_EQ(marks->view.as<float>()[(k * m + b) * 3 + 2], -1.f) << "padding of sample " << k;
  }
}

TEST(OwnFieldKind, ADeclaredKindIsBatchedBesideTheBoxesAndStaysAligned) {
  std::size_t seen = 0;
  for (const Batch& batch : marked(10).with_options({.threads = 2}).batch(4)) {
    expect_aligned(batch);
    seen += batch.size();
  }
  EXPECT_EQ(seen, 10u);
}

TEST(OwnFieldKind, EveryFieldTensorSaysWhatItIsAndHowItIsPadded) {
  BatchIterator it = marked(6).with_options({.threads = 1}).batch(3).begin();
  const std::optional<Batch> batch = it.next();
  ASSERT_TRUE(batch);
  std::set<std::string> names;
  for (const BatchTensor& tensor : batch->fields()) {
    EXPECT_TRUE(names.insert(std::string(tensor.name)).second) << tensor.name << " twice";
    EXPECT_EQ(tensor.view.shape[0], 3) << tensor.name;
    if (tensor.padding.dim < 0) continue;
    const BatchTensor* counts = batch->field(tensor.padding.counts);
    ASSERT_NE(counts, nullptr) << tensor.name << "'s counts";
    EXPECT_EQ(counts->view.dtype, DType::int64);
  }
  EXPECT_EQ(names, (std::set<std::string>{"boxes", "box_classes", "box_crowd", "box_counts", "marks",
                                          "mark_counts"}));
}

TEST(OwnFieldKind, ItStaysWithItsSampleThroughCompactionAndPadding) {
  const Dataset filtered = marked(11).filter([](const Sample& s) { return s.index % 3 != 1; });
  std::size_t seen = 0;
  for (const Batch& batch : filtered.with_options({.threads = 3}).batch(3)) {
    expect_aligned(batch);
    seen += batch.size();
  }
  EXPECT_EQ(seen, 7u);
  std::size_t padded = 0;
  for (const Batch& batch : marked(8)
                                .shard(2, 0, ShardRemainder::pad)
                                .filter([](const Sample& s) { return s.index != 2; })
                                .with_options({.threads = 2})
                                .batch(4)) {
    expect_aligned(batch);
    for (const SampleInfo& info : batch.samples()) padded += info.padding ? 1 : 0;
  }
  EXPECT_EQ(padded, 1u);
}

TEST(OwnFieldKind, AGivenSampleShapeLaysOutTheDeclaredKindWithoutAProbe) {
  BatchIterator it = marked(4)
                         .with_options({.threads = 1})
                         .batch(2, BatchOptions{.sample_shape = ImageShape{kSize, kSize, 3}})
                         .begin();
  const std::optional<Batch> batch = it.next();
  ASSERT_TRUE(batch);
  expect_aligned(*batch);
}

TEST(OwnFieldKind, AnUndeclaredKindIsBatchedWhenTheFirstSampleHasIt) {
  BatchIterator it = marked(4, /*declare=*/false).with_options({.threads = 1}).batch(2).begin();
  const std::optional<Batch> batch = it.next();
  ASSERT_TRUE(batch);
  expect_aligned(*batch);
  // Without a probe (a given shape) nothing lays it out: each sample fails in the batch stage.
  BatchIterator given = marked(4, false)
                            .with_options({.threads = 1, .on_error = OnError::skip})
                            .batch(2, BatchOptions{.sample_shape = ImageShape{kSize, kSize, 3}})
                            .begin();
  while (given.next()) {
  }
  EXPECT_EQ(given.stats().skipped, 4u);
}

TEST(OwnFieldKind, AFeederHandsItOnByName) {
  DeviceFeeder feeder(resolve(DeviceSpec::parse("cpu")), {.depth = 2});
  std::size_t batches = 0;
  for (DeviceBatch& batch : feeder.feed(marked(6).with_options({.threads = 2}).batch(3))) {
    EXPECT_TRUE(batch.field("marks"));
    EXPECT_EQ(batch.field("marks").shape[2], 3);
    EXPECT_FALSE(batch.field("no such tensor"));
    ++batches;
  }
  EXPECT_EQ(batches, 2u);
}

}  // namespace
}  // namespace conveyor
