// Per-sample randomness across epochs: element `index` of epoch `epoch` gets sample_seed(seed, epoch,
// index), and the image ops draw only from it. So every epoch sees other crops, flips and colours of the
// same photos, and any one of them can be made again by hand from its (epoch, index).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "conveyor/read_file.h"
#include "fixtures.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using Pixels = std::vector<std::uint8_t>;

constexpr int kSize = 16;
constexpr std::uint64_t kSeed = 21;
constexpr std::size_t kImages = 16;

class EpochSeeds : public ::testing::Test {
 protected:
  // 16 real JPEG files of 48 x 64, element i labelled i so that a batch slot tells which file it holds.
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    const Dataset folder = Dataset::image_folder(testing::make_jpeg_folder(*dir_, 2, kImages / 2, 48, 64));
    std::vector<std::int64_t> labels;
    for (std::size_t i = 0; i < folder.source_size(); ++i) {
      paths_.push_back(folder.source_path(i));
      labels.push_back(static_cast<std::int64_t>(i));
    }
    files_ = Dataset::files(paths_, labels);
  }
  static void TearDownTestSuite() {
    files_.reset();
    paths_.clear();
    dir_.reset();
  }

  // The pixels of every (label, epoch), from a run of `dataset` as samples.
  static std::map<std::pair<std::int64_t, std::uint64_t>, Pixels> images_by_epoch(const Dataset& dataset) {
    std::map<std::pair<std::int64_t, std::uint64_t>, Pixels> out;
    for (const Sample& s : dataset.with_options({.threads = 3, .seed = kSeed})) {
      const ConstImageView image = s.image();
      Pixels pixels(image.shape().bytes());
      for (int y = 0; y < image.height; ++y)
        std::memcpy(pixels.data() + static_cast<std::size_t>(y) * image.width * image.channels, image.row(y),
                    static_cast<std::size_t>(image.width) * image.channels);
      out[{s.label, s.epoch}] = std::move(pixels);
    }
    return out;
  }

  // How many of the images differ between epoch `a` and epoch `b`.
  static std::size_t changed_between(const std::map<std::pair<std::int64_t, std::uint64_t>, Pixels>& images,
                                     std::uint64_t a, std::uint64_t b) {
    std::size_t changed = 0;
    for (std::size_t i = 0; i < kImages; ++i) {
      const auto label = static_cast<std::int64_t>(i);
      changed += images.at({label, a}) != images.at({label, b});
    }
    return changed;
  }

  static std::unique_ptr<testing::TempDir> dir_;
  static std::vector<std::string> paths_;
  static std::optional<Dataset> files_;
};
std::unique_ptr<testing::TempDir> EpochSeeds::dir_;
std::vector<std::string> EpochSeeds::paths_;
std::optional<Dataset> EpochSeeds::files_;

const std::vector<SampleOp>& augmentations() {
  static const std::vector<SampleOp> ops = {
      ops::decode_random_resized_crop(kSize), ops::flip_horizontal(0.5),
      ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4})};
  return ops;
}

Dataset augmented(Dataset dataset) {
  for (const SampleOp& op : augmentations()) dataset = dataset.map(op);
  return dataset;
}

// The same photo decoded and resized the same way every epoch: what a random op then does is all that
// can differ between epochs.
Dataset fixed_size(const Dataset& dataset) {
  return dataset.map(ops::decode()).map(ops::resize(kSize, kSize));
}

TEST_F(EpochSeeds, EveryElementOfEveryEpochCarriesTheSeedOfItsEpochAndIndex) {
  const Dataset shuffled = augmented(files_->shuffle(kImages, 3).repeat(3));
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;  // (epoch, index)
  for (const Sample& s : shuffled.with_options({.threads = 3, .seed = kSeed})) {
    EXPECT_EQ(s.seed, sample_seed(kSeed, s.epoch, s.index)) << "epoch " << s.epoch << ", index " << s.index;
    seen.insert({s.epoch, s.index});
  }
  EXPECT_EQ(seen.size(), 3 * kImages);
  std::size_t infos = 0;
  for (const Batch& batch : shuffled.with_options({.threads = 3, .seed = kSeed}).batch(5)) {
    for (const SampleInfo& info : batch.samples()) {
      EXPECT_EQ(info.seed, sample_seed(kSeed, info.epoch, info.index))
          << "epoch " << info.epoch << ", index " << info.index;
      ++infos;
    }
  }
  EXPECT_EQ(infos, 3 * kImages);
  // Seeds are not shared between epochs or elements.
  std::set<std::uint64_t> seeds;
  for (const auto& [epoch, index] : seen) seeds.insert(sample_seed(kSeed, epoch, index));
  EXPECT_EQ(seeds.size(), seen.size());
}

TEST_F(EpochSeeds, EveryEpochsPixelsAreTheOpsAppliedByHandWithThatEpochsSeed) {
  const BatchedDataset batches =
      augmented(files_->shuffle(kImages, 5).repeat(3)).with_options({.threads = 4, .seed = kSeed}).batch(6);
  std::vector<std::uint64_t> per_epoch(3, 0);
  for (const Batch& batch : batches) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const SampleInfo& info = batch.samples()[i];
      Sample by_hand;
      by_hand.seed = sample_seed(kSeed, info.epoch, info.index);
      read_file(paths_.at(static_cast<std::size_t>(batch.labels()[i])), by_hand.encoded);
      // Each op at its position in the chain, as the pipeline numbers them (its draws depend on it).
      std::uint32_t position = 0;
      for (const SampleOp& op : augmentations()) {
        by_hand.op_position = position++;
        op.apply(by_hand);
      }
      const ConstImageView want = by_hand.image();
      ASSERT_EQ(want.shape(), batch.sample_shape());
      bool same = true;
      for (int y = 0; y < want.height; ++y)
        same = same && std::memcmp(want.row(y), batch.image(i).row(y),
                                   static_cast<std::size_t>(want.width) * want.channels) == 0;
      EXPECT_TRUE(same) << "epoch " << info.epoch << ", index " << info.index << ", file "
                        << paths_.at(static_cast<std::size_t>(batch.labels()[i]));
      ++per_epoch.at(info.epoch);
    }
  }
  EXPECT_EQ(per_epoch, (std::vector<std::uint64_t>(3, kImages)));
}

TEST_F(EpochSeeds, EveryEpochCropsEveryImageElsewhere) {
  const auto images = images_by_epoch(files_->repeat(3).map(ops::decode_random_resized_crop(kSize)));
  EXPECT_EQ(changed_between(images, 0, 1), kImages);
  EXPECT_EQ(changed_between(images, 1, 2), kImages);
}

TEST_F(EpochSeeds, EveryEpochFlipsAnotherSetOfImages) {
  const auto plain = images_by_epoch(fixed_size(*files_));
  const auto flipped = images_by_epoch(fixed_size(files_->repeat(3)).map(ops::flip_horizontal(0.5)));
  // Which images each epoch mirrored (each one is either the plain image or its mirror).
  std::vector<std::vector<bool>> mirrored(3);
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    for (std::size_t i = 0; i < kImages; ++i) {
      const auto label = static_cast<std::int64_t>(i);
      const Pixels& out = flipped.at({label, epoch});
      const Pixels& in = plain.at({label, 0});
      Pixels mirror(in.size());
      for (int y = 0; y < kSize; ++y)
        for (int x = 0; x < kSize; ++x)
          std::memcpy(&mirror[(static_cast<std::size_t>(y) * kSize + x) * 3],
                      &in[(static_cast<std::size_t>(y) * kSize + (kSize - 1 - x)) * 3], 3);
      ASSERT_TRUE(out == in || out == mirror) << "image " << i << ", epoch " << epoch;
      mirrored[epoch].push_back(out == mirror && out != in);
    }
  }
  EXPECT_NE(mirrored[0], mirrored[1]);
  EXPECT_NE(mirrored[1], mirrored[2]);
}

TEST_F(EpochSeeds, EveryEpochGivesEveryImageOtherColours) {
  const auto images =
      images_by_epoch(fixed_size(files_->repeat(3))
                          .map(ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4})));
  EXPECT_EQ(changed_between(images, 0, 1), kImages);
  EXPECT_EQ(changed_between(images, 1, 2), kImages);
}

}  // namespace
}  // namespace conveyor
