// Batching: full batches in fixed-size slots, the remainder, sample shapes, closing the holes that skipped
// and filtered elements leave, and the bounded buffer pool.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/random.h"
#include "fixtures.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using testing::fill_from_seed;
using testing::number_of;
using testing::numbered_memory;

constexpr ImageShape kShape{6, 5, 3};
constexpr std::int64_t kNoClasses = 1'000'000;  // labels equal the element's number

// The pixels fill_from_seed makes for element `number` at (epoch, index) under `seed`.
std::vector<std::uint8_t> expected_pixels(std::uint64_t number, std::uint64_t epoch, std::uint64_t index,
                                          std::uint64_t seed) {
  Sample sample;
  sample.seed = sample_seed(seed, epoch, index);
  sample.encoded.resize(sizeof number);
  std::memcpy(sample.encoded.data(), &number, sizeof number);
  fill_from_seed(kShape).apply(sample);
  const ConstImageView image = sample.image();
  return {image.data, image.data + image.shape().bytes()};
}

std::vector<std::int64_t> all_labels(const BatchedDataset& dataset,
                                     std::vector<std::size_t>* sizes = nullptr) {
  std::vector<std::int64_t> labels;
  for (const Batch& batch : dataset) {
    labels.insert(labels.end(), batch.labels().begin(), batch.labels().end());
    if (sizes) sizes->push_back(batch.size());
  }
  return labels;
}

TEST(Batch, FullBatchesThenTheRemainderUnlessDropped) {
  const Dataset d = numbered_memory(10).map(fill_from_seed(kShape)).with_options({.threads = 2});
  std::vector<std::size_t> sizes;
  testing::checksum_of(d.batch(4), &sizes);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 4, 2}));
  sizes.clear();
  testing::checksum_of(d.batch(4, /*drop_remainder=*/true), &sizes);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 4}));
  sizes.clear();
  testing::checksum_of(d.batch(5), &sizes);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{5, 5}));
}

TEST(Batch, EverySlotHoldsItsSamplesPixelsAndLabelInOrder) {
  const Dataset d = numbered_memory(23, kNoClasses).shuffle(8, 1).map(fill_from_seed(kShape));
  std::vector<Sample> samples;
  for (const Sample& s : d.with_options({.threads = 3, .seed = 4})) samples.push_back(s);
  std::size_t next = 0;
  for (const Batch& batch : d.with_options({.threads = 3, .seed = 4}).batch(5)) {
    EXPECT_EQ(batch.sample_shape(), kShape);
    EXPECT_EQ(batch.sequence(), next / 5);
    for (std::size_t i = 0; i < batch.size(); ++i, ++next) {
      const Sample& s = samples.at(next);
      EXPECT_EQ(batch.labels()[i], s.label);
      const std::vector<std::uint8_t> want = expected_pixels(number_of(s), s.epoch, s.index, 4);
      EXPECT_EQ(0, std::memcmp(batch.image(i).data, want.data(), want.size())) << "slot " << i;
    }
  }
  EXPECT_EQ(next, 23u);
}

TEST(Batch, TheLastOpWritesStraightIntoTheSlotSoNothingIsCopied) {
  BatchIterator it =
      numbered_memory(12).map(fill_from_seed(kShape)).with_options({.threads = 2}).batch(4).begin();
  while (it.next()) {
  }
  const PipelineStats stats = it.stats();
  const auto batch_stage = std::find_if(stats.stages.begin(), stats.stages.end(),
                                        [](const StageStats& s) { return s.name == "batch"; });
  ASSERT_NE(batch_stage, stats.stages.end());
  EXPECT_EQ(batch_stage->count, 0u);
}

TEST(Batch, AnImageLeftOutsideTheSlotIsCopiedIntoIt) {
  // The second op reads the slot and writes a new image, which goes to scratch memory.
  const Dataset d =
      numbered_memory(9, kNoClasses).map(fill_from_seed(kShape)).map(testing::negate_into_new_image());
  BatchIterator it = d.with_options({.threads = 2, .seed = 3}).batch(4).begin();
  std::size_t n = 0;
  while (std::optional<Batch> batch = it.next()) {
    for (std::size_t i = 0; i < batch->size(); ++i, ++n) {
      std::vector<std::uint8_t> want = expected_pixels(n, 0, n, 3);
      for (auto& v : want) v = static_cast<std::uint8_t>(255 - v);
      EXPECT_EQ(0, std::memcmp(batch->image(i).data, want.data(), want.size()));
    }
  }
  EXPECT_EQ(n, 9u);
  for (const StageStats& stage : it.stats().stages)
    if (stage.name == "batch") {
      EXPECT_EQ(stage.count, 9u);
    }
}

TEST(Batch, TheSampleShapeCanBeGiven) {
  BatchIterator it = numbered_memory(3).map(fill_from_seed(kShape)).batch(2, kShape).begin();
  std::optional<Batch> batch = it.next();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->sample_shape(), kShape);
  EXPECT_EQ(batch->capacity(), 2u);
}

SampleOp odd_shape_for(std::uint64_t number) {
  return SampleOp{"shape", [number](Sample& s) {
                    const ImageShape shape = number_of(s) == number ? ImageShape{5, 5, 3} : kShape;
                    s.output(shape);
                    s.publish();
                  }};
}

TEST(Batch, AnotherShapeFailsInTheBatchStage) {
  BatchIterator it = numbered_memory(12).map(odd_shape_for(6)).with_options({.threads = 2}).batch(4).begin();
  ASSERT_TRUE(it.next());  // elements 0..3
  try {
    it.next();  // the batch of element 6
    FAIL() << "no error";
  } catch (const PipelineError& error) {
    EXPECT_EQ(error.stage(), "batch");
    EXPECT_EQ(error.path(), "<memory:6>");
    EXPECT_NE(error.reason().find("5x5x3"), std::string::npos) << error.reason();
  }
  EXPECT_FALSE(it.next());
}

TEST(Batch, AnotherShapeIsSkippedWhenAsked) {
  BatchIterator it = numbered_memory(12, kNoClasses)
                         .map(odd_shape_for(6))
                         .with_options({.threads = 2, .on_error = OnError::skip})
                         .batch(4)
                         .begin();
  std::vector<std::int64_t> labels;
  while (std::optional<Batch> batch = it.next())
    labels.insert(labels.end(), batch->labels().begin(), batch->labels().end());
  EXPECT_EQ(labels, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11}));
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.skipped, 1u);
  EXPECT_EQ(stats.skip_reasons.at("batch: shape_mismatch"), 1u);
}

TEST(Batch, WithoutAnImageBatchingFails) {
  BatchIterator it = numbered_memory(3).batch(2).begin();
  try {
    it.next();
    FAIL() << "no error";
  } catch (const PipelineError& error) {
    EXPECT_EQ(error.stage(), "batch");
  }
}

TEST(Holes, FilteredElementsLeaveNoHoleAndOrderIsKept) {
  for (const std::size_t in_flight : {1u, 5u, 64u}) {
    const Dataset d = numbered_memory(50, kNoClasses)
                          .map(fill_from_seed(kShape))
                          .filter([](const Sample& s) { return number_of(s) % 3 != 0 && number_of(s) < 45; })
                          .with_options({.threads = 3, .max_in_flight = in_flight});
    std::vector<std::size_t> sizes;
    const std::vector<std::int64_t> labels = all_labels(d.batch(4), &sizes);
    std::vector<std::int64_t> expected;
    for (std::int64_t i = 0; i < 45; ++i)
      if (i % 3 != 0) expected.push_back(i);
    EXPECT_EQ(labels, expected);
    for (std::size_t i = 0; i + 1 < sizes.size(); ++i) EXPECT_EQ(sizes[i], 4u);
    EXPECT_EQ(sizes.back(), expected.size() % 4 == 0 ? 4u : expected.size() % 4);
  }
}

TEST(Holes, KeptPixelsMoveWithTheirLabels) {
  const Dataset d = numbered_memory(40, kNoClasses)
                        .map(fill_from_seed(kShape))
                        .filter([](const Sample& s) { return number_of(s) % 4 == 1; })
                        .with_options({.threads = 2, .seed = 6});
  for (const Batch& batch : d.batch(3)) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto number = static_cast<std::uint64_t>(batch.labels()[i]);
      const std::vector<std::uint8_t> want = expected_pixels(number, 0, number, 6);
      EXPECT_EQ(0, std::memcmp(batch.image(i).data, want.data(), want.size())) << "element " << number;
    }
  }
}

TEST(Holes, AWholeBatchOfDropsIsClosedUp) {
  const Dataset d = numbered_memory(40, kNoClasses)
                        .map(fill_from_seed(kShape))
                        .filter([](const Sample& s) { return number_of(s) < 8 || number_of(s) >= 24; })
                        .with_options({.threads = 2});
  std::vector<std::size_t> sizes;
  const std::vector<std::int64_t> labels = all_labels(d.batch(8), &sizes);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{8, 8, 8}));
  EXPECT_EQ(labels.front(), 0);
  EXPECT_EQ(labels[8], 24);
}

TEST(Holes, EverythingDroppedGivesNoBatch) {
  const Dataset d =
      numbered_memory(10).map(fill_from_seed(kShape)).filter([](const Sample&) { return false; });
  EXPECT_TRUE(all_labels(d.batch(3, kShape)).empty());
}

TEST(Batch, EpochAndSequenceFollowTheFirstSample) {
  BatchIterator it = numbered_memory(6).repeat(2).map(fill_from_seed(kShape)).batch(4).begin();
  std::vector<std::uint64_t> epochs, sequences;
  while (std::optional<Batch> batch = it.next()) {
    epochs.push_back(batch->epoch());
    sequences.push_back(batch->sequence());
  }
  EXPECT_EQ(epochs, (std::vector<std::uint64_t>{0, 0, 1}));
  EXPECT_EQ(sequences, (std::vector<std::uint64_t>{0, 1, 2}));
}

TEST(Batch, ABatchOutlivesItsIterator) {
  std::optional<Batch> kept;
  {
    BatchIterator it = numbered_memory(100, kNoClasses)
                           .map(fill_from_seed(kShape))
                           .with_options({.seed = 2})
                           .batch(4)
                           .begin();
    kept = it.next();
  }
  ASSERT_TRUE(kept);
  EXPECT_FALSE(kept->pinned());  // no GPU on this machine: aligned host memory
  const std::vector<std::uint8_t> want = expected_pixels(3, 0, 3, 2);
  EXPECT_EQ(0, std::memcmp(kept->image(3).data, want.data(), want.size()));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(kept->pixels().data()) % 64, 0u);
}

TEST(Pool, NeverGrowsBeyondItsConfiguredSizeInALongRun) {
  const PipelineOptionChanges options{.threads = 3, .max_in_flight = 8, .held_batches = 1};
  auto run = [&](std::size_t elements) {
    BatchIterator it = numbered_memory(elements)
                           .map(fill_from_seed(kShape))
                           .with_options(options)
                           .batch(4)
                           .prefetch(2)
                           .begin();
    std::size_t batches = 0;
    while (it.next()) ++batches;
    EXPECT_EQ(batches, (elements + 3) / 4);
    return it.stats();
  };
  const PipelineStats short_run = run(40);
  const PipelineStats long_run = run(4000);
  // prefetch 2 + in flight (ceil(7 / 4) + 3) + held 1, whatever the dataset's length.
  EXPECT_EQ(long_run.pool_capacity, 8u);
  EXPECT_EQ(short_run.pool_capacity, long_run.pool_capacity);
  EXPECT_LE(long_run.pool_buffers, long_run.pool_capacity);
  EXPECT_GE(long_run.pool_buffers, 1u);
  EXPECT_LE(long_run.queue.max, long_run.pool_capacity);
}

TEST(Pool, AConsumerThatKeepsEveryBatchGetsAnErrorNotAHang) {
  testing::Watchdog watchdog(std::chrono::seconds(10), "hoarding consumer");
  BatchIterator it = numbered_memory(400)
                         .map(fill_from_seed(kShape))
                         .with_options({.threads = 2})
                         .batch(2)
                         .prefetch(1)
                         .begin();
  std::vector<Batch> hoard;
  EXPECT_THROW(
      {
        while (std::optional<Batch> batch = it.next()) hoard.push_back(std::move(*batch));
      },
      Error);
  EXPECT_LE(hoard.size(), it.stats().pool_capacity);
  hoard.clear();  // giving them back lets the pipeline go on
  std::size_t more = 0;
  while (it.next()) ++more;
  EXPECT_GT(more, 0u);
}

TEST(Pool, KeepingHeldBatchesIsFine) {
  testing::Watchdog watchdog(std::chrono::seconds(10), "held batches");
  BatchIterator it = numbered_memory(200)
                         .map(fill_from_seed(kShape))
                         .with_options({.threads = 2, .held_batches = 3})
                         .batch(2)
                         .prefetch(1)
                         .begin();
  std::vector<Batch> window;  // like a feeder with three copies in flight
  std::size_t total = 0;
  while (std::optional<Batch> batch = it.next()) {
    total += batch->size();
    window.push_back(std::move(*batch));
    if (window.size() > 3) window.erase(window.begin());
  }
  EXPECT_EQ(total, 200u);
}

}  // namespace
}  // namespace conveyor
