// Batches of samples with fields (conveyor/fields.h) from a user's own SampleSource: masks stacked, boxes
// padded to the batch's most (or a fixed number) with classes, crowd flags and counts, multi-hot rows; each
// field stays with its sample through compaction and padding, the same at any thread count, and the source
// orders, splits and resumes like a folder of files.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/dlpack.h"
#include "conveyor/error.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "support/scenes.h"

namespace conveyor {
namespace {

constexpr int kSize = 24;

// Scenes in memory: element i has 1 + i % 4 rectangles (so batches differ in their most boxes), tags {i % 3,
// 5}, label i; element `crowded` has 9 rectangles.
class SceneSource final : public SampleSource {
 public:
  explicit SceneSource(std::size_t count, std::size_t crowded = static_cast<std::size_t>(-1),
                       bool tags = true, bool left_out = false)
      : tags_(tags), left_out_(left_out) {
    for (std::size_t i = 0; i < count; ++i)
      scenes_.push_back(testing::make_scene(40, 50, i == crowded ? 9 : 1 + static_cast<int>(i % 4), i + 1));
  }
  std::size_t size() const override { return scenes_.size(); }
  void read(std::size_t i, Sample& sample, const ReadLimits&) const override {
    sample.path = "scene " + std::to_string(i);
    sample.label = static_cast<std::int64_t>(i);
    sample.encoded = scenes_[i].jpeg;
    sample.encoded_mask = scenes_[i].mask_png;
    sample.boxes.assign(scenes_[i].boxes);
    if (tags_) sample.tags = {static_cast<std::int64_t>(i % 3), 5};
  }
  FieldSet fields() const override { return {.mask = true, .boxes = true, .tags = tags_}; }
  std::string describe() const override { return "scenes " + std::to_string(scenes_.size()); }
  std::vector<SkippedSample> left_out() const override {
    if (!left_out_) return {};
    return {{"scene x", "source", "no mask"}};
  }

 private:
  std::vector<testing::Scene> scenes_;
  bool tags_, left_out_;
};

Dataset scenes(std::size_t count, std::size_t crowded = static_cast<std::size_t>(-1), bool tags = true) {
  return Dataset::from_source(std::make_shared<SceneSource>(count, crowded, tags));
}

std::vector<SampleOp> chain() { return {ops::decode_random_resized_crop(kSize), ops::flip_horizontal(0.5)}; }

Dataset mapped(const Dataset& dataset) {
  Dataset d = dataset;
  for (const SampleOp& op : chain()) d = d.map(op);
  return d;
}

// What the chain makes of element `i` alone (epoch 0, index i, seed 0), as the pipeline would.
Sample expected(const SceneSource& source, std::size_t i) {
  Sample sample;
  sample.index = i;
  sample.seed = sample_seed(0, 0, i);
  source.read(i, sample, {});
  const std::vector<SampleOp> ops = chain();
  for (std::size_t k = 0; k < ops.size(); ++k) {
    sample.op_position = static_cast<std::uint32_t>(k);
    ops[k].apply(sample);
  }
  return sample;
}

void expect_sample_matches(const Batch& batch, std::size_t k, const Sample& want) {
  const ConstMaskView mask = batch.mask(k);
  ASSERT_EQ(mask.shape(), want.mask().shape());
  EXPECT_EQ(std::memcmp(mask.data, want.mask().data, mask.shape().bytes()), 0) << "sample " << k;
  const std::span<const Box> boxes = batch.boxes(k);
  ASSERT_EQ(boxes.size(), want.boxes.size()) << "sample " << k;
  for (std::size_t b = 0; b < boxes.size(); ++b) {
    EXPECT_EQ(boxes[b], want.boxes.boxes()[b]);
    EXPECT_EQ(batch.box_classes(k)[b], want.boxes.classes()[b]);
  }
}

TEST(FieldBatches, MasksAreStackedAndBoxesPaddedToTheBatchsMost) {
  const auto source = std::make_shared<SceneSource>(10);
  const BatchedDataset batches = mapped(Dataset::from_source(source))
                                     .with_options({.threads = 2})
                                     .batch(4, BatchOptions{.num_classes = 6});
  std::size_t seen = 0;
  for (const Batch& batch : batches) {
    ASSERT_TRUE(batch.has_masks());
    ASSERT_TRUE(batch.has_boxes());
    const TensorView masks = batch.mask_tensor();
    EXPECT_EQ(masks.dtype, DType::uint8);
    EXPECT_EQ(masks.ndim, 3);
    EXPECT_EQ(masks.shape[1], kSize);
    std::size_t most = 0;
    for (std::size_t k = 0; k < batch.size(); ++k) {
      const std::size_t i = batch.samples()[k].index;
      const Sample want = expected(*source, i);
      expect_sample_matches(batch, k, want);
      most = std::max(most, want.boxes.size());
      EXPECT_EQ(batch.box_count_tensor().as<std::int64_t>()[k], static_cast<std::int64_t>(want.boxes.size()));
      // Padding: class -1 and zero boxes after the sample's count.
      for (std::size_t b = want.boxes.size(); b < batch.max_boxes(); ++b) {
        EXPECT_EQ(batch.box_class_tensor().as<std::int64_t>()[k * batch.max_boxes() + b], -1);
        EXPECT_EQ(batch.box_tensor().as<float>()[(k * batch.max_boxes() + b) * 4 + 2], 0.f);
      }
      const std::uint8_t* hot = batch.multi_hot_tensor().as<std::uint8_t>() + k * 6;
      for (std::int64_t t = 0; t < 6; ++t)
        EXPECT_EQ(hot[t], t == static_cast<std::int64_t>(i % 3) || t == 5 ? 1 : 0) << "tag " << t;
      ++seen;
    }
    EXPECT_EQ(batch.max_boxes(), most);
    EXPECT_EQ(batch.box_tensor().shape[1], static_cast<std::int64_t>(most));
  }
  EXPECT_EQ(seen, 10u);
}

TEST(FieldBatches, AFixedMaxBoxesPadsToItAndRefusesMore) {
  // Resized, not cropped: every box stays, and element 3 keeps its 9.
  const BatchedDataset fixed = scenes(8, /*crowded=*/3)
                                   .map(ops::decode())
                                   .map(ops::resize(kSize, kSize))
                                   .with_options({.threads = 2, .on_error = OnError::skip})
                                   .batch(4, BatchOptions{.max_boxes = 5, .num_classes = 6});
  BatchIterator it = fixed.begin();
  std::size_t delivered = 0;
  while (std::optional<Batch> batch = it.next()) {
    EXPECT_EQ(batch->max_boxes(), 5u);
    EXPECT_EQ(batch->box_tensor().shape[1], 5);
    for (const SampleInfo& info : batch->samples()) EXPECT_NE(info.index, 3u);
    delivered += batch->size();
  }
  EXPECT_EQ(delivered, 7u);
  EXPECT_EQ(it.stats().skip_reasons.at("batch: invalid_argument"), 1u);
}

TEST(FieldBatches, FieldsAreTheSameAtAnyThreadCount) {
  const auto run = [](int threads) {
    std::vector<std::uint8_t> bytes;
    for (const Batch& batch :
         mapped(scenes(13)).with_options({.threads = threads}).batch(4, BatchOptions{.num_classes = 6})) {
      const TensorView masks = batch.mask_tensor(), boxes = batch.box_tensor(),
                       hot = batch.multi_hot_tensor();
      for (const TensorView& t : {masks, boxes, hot}) {
        const auto* p = static_cast<const std::uint8_t*>(t.data);
        bytes.insert(bytes.end(), p, p + t.bytes());
      }
    }
    return bytes;
  };
  const std::vector<std::uint8_t> one = run(1);
  EXPECT_FALSE(one.empty());
  EXPECT_EQ(run(3), one);
}

TEST(FieldBatches, FieldsStayWithTheirSampleWhenHolesAreClosed) {
  const auto source = std::make_shared<SceneSource>(11);
  const BatchedDataset batches = mapped(Dataset::from_source(source))
                                     .filter([](const Sample& s) { return s.index % 3 != 1; })
                                     .with_options({.threads = 3})
                                     .batch(3, BatchOptions{.num_classes = 6});
  std::size_t seen = 0;
  for (const Batch& batch : batches)
    for (std::size_t k = 0; k < batch.size(); ++k, ++seen)
      expect_sample_matches(batch, k, expected(*source, batch.samples()[k].index));
  EXPECT_EQ(seen, 7u);
}

TEST(FieldBatches, AnEvenSplitPadsAHoleWithAKeptSamplesFields) {
  const auto source = std::make_shared<SceneSource>(8);
  const BatchedDataset batches = mapped(Dataset::from_source(source))
                                     .shard(2, 0, ShardRemainder::pad)
                                     .filter([](const Sample& s) { return s.index != 2; })
                                     .with_options({.threads = 2})
                                     .batch(4, BatchOptions{.num_classes = 6});
  std::size_t padded = 0;
  for (const Batch& batch : batches) {
    ASSERT_EQ(batch.size(), 4u);
    for (std::size_t k = 0; k < batch.size(); ++k) {
      const SampleInfo& info = batch.samples()[k];
      padded += info.padding ? 1 : 0;
      expect_sample_matches(batch, k, expected(*source, info.index));  // a padding copy: its original's
    }
  }
  EXPECT_EQ(padded, 1u);
}

TEST(FieldBatches, TagsNeedAMultiHotFieldAndAClassRange) {
  const auto count_skips = [](const BatchedDataset& batches) {
    BatchIterator it = batches.begin();
    while (it.next()) {
    }
    return it.stats().skipped;
  };
  const Dataset tagged = mapped(scenes(4)).with_options({.threads = 1, .on_error = OnError::skip});
  EXPECT_EQ(count_skips(tagged.batch(2)), 4u);                                  // no num_classes
  EXPECT_EQ(count_skips(tagged.batch(2, BatchOptions{.num_classes = 5})), 4u);  // tag 5 is out of range
  EXPECT_EQ(count_skips(tagged.batch(2, BatchOptions{.num_classes = 6})), 0u);
}

TEST(FieldBatches, TheSourceOrdersSplitsAndResumesLikeFiles) {
  const Dataset source = scenes(12, static_cast<std::size_t>(-1), /*tags=*/false);
  EXPECT_EQ(source.source_size(), 12u);
  EXPECT_EQ(source.source_path(3), "<source:3>");  // SampleSource's default
  EXPECT_TRUE(source.fields().mask);
  const BatchedDataset batches =
      mapped(source.shuffle().shard(2, 1)).with_options({.threads = 2, .seed = 9}).batch(2);
  std::vector<std::uint64_t> all;
  for (const Batch& batch : batches)
    for (const SampleInfo& info : batch.samples()) all.push_back(info.index);
  ASSERT_EQ(all.size(), 6u);
  for (std::uint64_t index : all) EXPECT_EQ(index % 2, 1u);
  BatchIterator first = batches.begin();
  first.next();
  const IteratorState state = first.state();
  std::vector<std::uint64_t> rest;
  BatchIterator resumed = batches.begin(state);
  while (std::optional<Batch> batch = resumed.next())
    for (const SampleInfo& info : batch->samples()) rest.push_back(info.index);
  EXPECT_EQ(rest, std::vector<std::uint64_t>(all.begin() + 2, all.end()));
  // A state of another source is refused.
  EXPECT_THROW(mapped(scenes(11, static_cast<std::size_t>(-1), false).shuffle().shard(2, 1))
                   .with_options({.threads = 2, .seed = 9})
                   .batch(2)
                   .begin(state),
               InvalidArgument);
}

TEST(FieldBatches, WhatTheSourceLeftOutIsCountedAsSkipped) {
  const Dataset source = Dataset::from_source(std::make_shared<SceneSource>(2, -1, true, /*left_out=*/true));
  BatchIterator it =
      mapped(source).with_options({.threads = 1}).batch(2, BatchOptions{.num_classes = 6}).begin();
  while (it.next()) {
  }
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.skip_reasons.at("source: left_out"), 1u);
  ASSERT_FALSE(stats.skipped_samples.empty());
  EXPECT_EQ(stats.skipped_samples[0].path, "scene x");
}

TEST(FieldBatches, FieldTensorsGoThroughDlpack) {
  BatchIterator it =
      mapped(scenes(3)).with_options({.threads = 1}).batch(3, BatchOptions{.num_classes = 6}).begin();
  const std::optional<Batch> batch = it.next();
  ASSERT_TRUE(batch);
  for (const TensorView& view :
       {batch->mask_tensor(), batch->box_tensor(), batch->box_class_tensor(), batch->box_crowd_tensor(),
        batch->box_count_tensor(), batch->multi_hot_tensor()}) {
    DLManagedTensor* tensor = to_dlpack(view, batch->share_memory());
    EXPECT_EQ(tensor->dl_tensor.ndim, view.ndim);
    tensor->deleter(tensor);
  }
}

TEST(FieldBatches, ClassificationBatchesHaveNoFields) {
  const Dataset files = Dataset::memory({testing::make_scene(20, 20, 1, 1).jpeg}, {4});
  BatchIterator it = files.map(ops::decode_center_crop(16)).with_options({.threads = 1}).batch(1).begin();
  const std::optional<Batch> batch = it.next();
  ASSERT_TRUE(batch);
  EXPECT_FALSE(batch->has_masks());
  EXPECT_FALSE(batch->has_boxes());
  EXPECT_FALSE(batch->has_multi_hot());
  EXPECT_FALSE(batch->mask_tensor());
  EXPECT_FALSE(files.fields().mask || files.fields().boxes);
}

}  // namespace
}  // namespace conveyor
