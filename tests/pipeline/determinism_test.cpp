// The same seed gives the same batches, bit for bit, whatever the thread count, prefetch depth or number
// of elements in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "fixtures.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using testing::checksum_of;

class Determinism : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    root_ = testing::make_jpeg_folder(*dir_, 3, 12);
  }
  static void TearDownTestSuite() { dir_.reset(); }
  // Real JPEG files: read, decoded with TurboJPEG, cropped at a seeded window into the slot.
  static Dataset jpegs() {
    return Dataset::image_folder(root_).shuffle(16, 7).repeat(2).map(testing::decode_and_crop(16));
  }
  static std::unique_ptr<testing::TempDir> dir_;
  static std::filesystem::path root_;
};
std::unique_ptr<testing::TempDir> Determinism::dir_;
std::filesystem::path Determinism::root_;

TEST_F(Determinism, ChecksumIsTheSameAtOneTwoAndEightThreads) {
  std::vector<std::size_t> sizes;
  const std::uint64_t one = checksum_of(jpegs().with_options({.threads = 1, .seed = 5}).batch(5), &sizes);
  EXPECT_EQ(sizes.size(), 15u);  // 72 images in 5s: 14 full batches and 2 left
  EXPECT_EQ(checksum_of(jpegs().with_options({.threads = 2, .seed = 5}).batch(5)), one);
  EXPECT_EQ(checksum_of(jpegs().with_options({.threads = 8, .seed = 5}).batch(5)), one);
  EXPECT_NE(checksum_of(jpegs().with_options({.threads = 2, .seed = 6}).batch(5)), one);
}

TEST_F(Determinism, ChecksumIsTheSameAtPrefetchOneAndSixtyFour) {
  const std::uint64_t reference = checksum_of(jpegs().with_options({.threads = 2, .seed = 1}).batch(4));
  EXPECT_EQ(checksum_of(jpegs().with_options({.threads = 2, .seed = 1}).batch(4).prefetch(1)), reference);
  EXPECT_EQ(checksum_of(jpegs().with_options({.threads = 2, .seed = 1}).batch(4).prefetch(64)), reference);
}

TEST_F(Determinism, ChecksumIsTheSameWithSixtyFourThreadsAndAnyTokenCount) {
  const std::uint64_t reference = checksum_of(jpegs().with_options({.threads = 1, .seed = 3}).batch(6));
  EXPECT_EQ(checksum_of(jpegs().with_options({.threads = 64, .seed = 3}).batch(6)), reference);
  EXPECT_EQ(checksum_of(jpegs().with_options({.threads = 4, .seed = 3, .max_in_flight = 1}).batch(6)),
            reference);
  EXPECT_EQ(checksum_of(jpegs().with_options({.threads = 4, .seed = 3, .max_in_flight = 100}).batch(6)),
            reference);
}

TEST_F(Determinism, TwoRandomOpsOfOneKindInAChainDrawIndependently) {
  // Were both flips drawing the same number, every image would be flipped twice or not at all: unchanged.
  auto images = [](const Dataset& d) {
    std::vector<std::vector<std::uint8_t>> out;
    for (const Batch& batch : d.batch(6)) {
      for (std::size_t i = 0; i < batch.size(); ++i) {
        const ConstImageView image = batch.image(i);
        out.emplace_back(image.data, image.data + image.shape().bytes());
      }
    }
    return out;
  };
  const Dataset plain = Dataset::image_folder(root_).map(testing::decode_and_crop(16));
  const Dataset twice = plain.map(ops::flip_horizontal(0.5))
                            .map(ops::flip_horizontal(0.5))
                            .with_options({.threads = 3, .seed = 8});
  const auto before = images(plain.with_options({.seed = 8})), after = images(twice);
  ASSERT_EQ(before.size(), 36u);
  ASSERT_EQ(after.size(), 36u);
  int changed = 0;
  for (std::size_t i = 0; i < before.size(); ++i) changed += before[i] != after[i];
  EXPECT_GT(changed, 6);  // about half: one of the two flips happened
  EXPECT_LT(changed, 30);
  EXPECT_EQ(images(twice.with_options({.threads = 1})), after);  // and still the same at any thread count
}

TEST_F(Determinism, OutOfOrderDeliveryGivesTheSameSamplesInOtherBatches) {
  // Count every (label, pixel sum) pair: the multiset is the same, only the grouping may differ.
  auto census = [](const BatchedDataset& d) {
    std::map<std::pair<std::int64_t, std::uint64_t>, int> seen;
    for (const Batch& batch : d) {
      for (std::size_t i = 0; i < batch.size(); ++i) {
        std::uint64_t sum = 0;
        const ConstImageView image = batch.image(i);
        for (std::size_t k = 0; k < image.shape().bytes(); ++k) sum = sum * 31 + image.data[k];
        ++seen[{batch.labels()[i], sum}];
      }
    }
    return seen;
  };
  EXPECT_EQ(census(jpegs().with_options({.threads = 4, .deterministic = false, .seed = 2}).batch(5)),
            census(jpegs().with_options({.threads = 1, .seed = 2}).batch(5)));
}

}  // namespace
}  // namespace conveyor
