// Reading a built chain back: Dataset::last_map, Dataset::without_last_map and BatchedDataset::with_samples,
// which let code take a trailing op off a chain the user built (place_pixel_ops moves flip and distort to
// the GPU that way).
#include <gtest/gtest.h>

#include <any>
#include <cstdint>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops/sample_ops.h"
#include "fixtures.h"

namespace conveyor {
namespace {

using testing::checksum_of;
using testing::fill_from_seed;
using testing::negate_into_new_image;
using testing::numbered_memory;

constexpr ImageShape kShape{6, 5, 3};

bool keep_all(const Sample&) { return true; }

TEST(Chain, LastMapIsTheOpAsGivenAtItsPositionAmongMapsAndFilters) {
  const Dataset chain = numbered_memory(8)
                            .map(fill_from_seed(kShape))
                            .shuffle(4, 1)  // ordering methods have no position
                            .filter(keep_all)
                            .map(ops::flip_horizontal(0.25))
                            .with_options({.threads = 2})
                            .prefetch(3);
  const std::optional<Dataset::PlacedMap> last = chain.last_map();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->op.name, "flip_horizontal");
  EXPECT_EQ(last->position, 2u);
  EXPECT_TRUE(last->op.apply);
  const auto* spec = std::any_cast<ops::FlipHorizontalSpec>(&last->op.spec);
  ASSERT_NE(spec, nullptr) << "the op's spec travels with the chain";
  EXPECT_EQ(spec->p, 0.25);
}

TEST(Chain, ThereIsNoLastMapAfterAFilterOrAnOrderingMethodOrWithoutMaps) {
  const Dataset mapped = numbered_memory(8).map(fill_from_seed(kShape));
  EXPECT_FALSE(mapped.filter(keep_all).last_map().has_value());
  EXPECT_FALSE(mapped.repeat(2).last_map().has_value());
  EXPECT_FALSE(mapped.take(3).last_map().has_value());
  EXPECT_FALSE(numbered_memory(8).last_map().has_value());
  EXPECT_FALSE(numbered_memory(8).with_options({.threads = 1}).last_map().has_value());
  EXPECT_THROW(mapped.filter(keep_all).without_last_map(), InvalidArgument);
  EXPECT_THROW(numbered_memory(8).without_last_map(), InvalidArgument);
}

TEST(Chain, WithoutTheLastMapTheChainRunsAsIfItWasNeverCalled) {
  const auto options = PipelineOptionChanges{.threads = 3, .seed = 19};
  const Dataset base =
      numbered_memory(20).shuffle(8).map(fill_from_seed(kShape)).map(ops::flip_horizontal(0.5));
  const Dataset longer = base.map(negate_into_new_image()).with_options(options).prefetch(5);
  const Dataset shorter = longer.without_last_map();
  EXPECT_EQ(shorter.options().threads, 3) << "options set after the map stay";
  EXPECT_EQ(shorter.options().seed, 19u);
  ASSERT_TRUE(shorter.last_map().has_value());
  EXPECT_EQ(shorter.last_map()->op.name, "flip_horizontal");
  EXPECT_EQ(shorter.last_map()->position, 1u);
  const std::uint64_t expected = checksum_of(base.with_options(options).batch(4));
  EXPECT_EQ(checksum_of(shorter.batch(4)), expected);
  EXPECT_NE(checksum_of(longer.batch(4)), expected) << "the negate must change the pixels";
  EXPECT_EQ(checksum_of(longer.without_last_map().without_last_map().map(ops::flip_horizontal(0.5)).batch(4)),
            expected)
      << "a map added back at the same position draws as the one taken off";
}

TEST(Chain, WithSamplesKeepsTheBatching) {
  const Dataset samples = numbered_memory(10).map(fill_from_seed(kShape)).map(negate_into_new_image());
  const BatchedDataset batched = samples.batch(4, kShape, /*drop_remainder=*/true).prefetch(5);
  const BatchedDataset other = batched.with_samples(samples.without_last_map());
  EXPECT_EQ(other.batch_size(), 4u);
  EXPECT_TRUE(other.drop_remainder());
  EXPECT_EQ(other.prefetch_depth(), 5u);
  EXPECT_EQ(other.sample_shape(), kShape);
  std::vector<std::size_t> sizes;
  EXPECT_EQ(checksum_of(other, &sizes),
            checksum_of(numbered_memory(10).map(fill_from_seed(kShape)).batch(4, true)));
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 4}));
}

}  // namespace
}  // namespace conveyor
