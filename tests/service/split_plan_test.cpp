// How a job's epochs are cut into splits: every rank gets the same batches, every element of a rank's share
// is in exactly one split, and a split's remainder starts where a lost worker stopped.
#include "src/service/common/split_plan.h"

#include <gtest/gtest.h>

#include <set>

#include "conveyor/error.h"

namespace conveyor::service::detail {
namespace {

TEST(SplitPlan, CoversEveryRankShareOnceInEqualBatches) {
  for (const bool drop_uneven : {false, true})
    for (std::uint64_t ranks = 1; ranks <= 3; ++ranks) {
      const SplitPlan plan({.source_size = 103,
                            .consumers = ranks,
                            .batch_size = 8,
                            .split_batches = 3,
                            .epochs = 2,
                            .drop_uneven = drop_uneven});
      const std::uint64_t share = drop_uneven ? 103 / ranks : (103 + ranks - 1) / ranks;
      EXPECT_EQ(plan.share(), share);
      EXPECT_EQ(plan.batches_per_epoch(), (share + 7) / 8);
      ASSERT_TRUE(plan.splits().has_value());
      std::set<std::pair<std::uint64_t, std::uint64_t>> seen;  // (epoch, position)
      for (std::uint64_t k = 0; k < *plan.splits(); ++k) {
        const std::optional<Split> s = plan.split(k);
        ASSERT_TRUE(s.has_value());
        EXPECT_LE(s->batches, 3u);
        for (std::uint64_t p = s->first_element; p < s->first_element + s->elements; ++p)
          EXPECT_TRUE(seen.insert({s->epoch, p}).second) << "epoch " << s->epoch << " position " << p;
      }
      EXPECT_EQ(seen.size(), 2 * share);
      EXPECT_FALSE(plan.split(*plan.splits()).has_value());
    }
}

TEST(SplitPlan, AnEpochEndsWithAShortBatchOrDropsIt) {
  const SplitPlan kept({.source_size = 20, .batch_size = 8, .split_batches = 2, .epochs = 1});
  EXPECT_EQ(kept.batches_per_epoch(), 3u);
  EXPECT_EQ(kept.split(1)->elements, 4u);  // batch 2 of 8, 8, 4
  const SplitPlan dropped(
      {.source_size = 20, .batch_size = 8, .split_batches = 2, .epochs = 1, .drop_remainder = true});
  EXPECT_EQ(dropped.batches_per_epoch(), 2u);
  EXPECT_EQ(dropped.splits(), 1u);
  EXPECT_EQ(dropped.split(0)->elements, 16u);
}

TEST(SplitPlan, ARemainderStartsAtItsFirstBatch) {
  const SplitPlan plan({.source_size = 100, .batch_size = 4, .split_batches = 5, .epochs = 0});
  const Split whole = *plan.split(7);  // epoch 1 (5 splits an epoch), batches 10..14
  EXPECT_EQ(whole.epoch, 1u);
  EXPECT_EQ(whole.first_batch, 10u);
  const Split rest = *plan.remainder(7, 3);
  EXPECT_EQ(rest.first_batch, 13u);
  EXPECT_EQ(rest.batches, 2u);
  EXPECT_EQ(rest.first_element, 52u);
  EXPECT_EQ(rest.elements, 8u);
  EXPECT_EQ(plan.remainder(7, 5)->batches, 0u);
  EXPECT_FALSE(plan.remainder(7, 6).has_value());
  EXPECT_FALSE(plan.splits().has_value());  // forever
  EXPECT_TRUE(plan.split(1'000'000).has_value());
}

TEST(SplitPlan, RefusesAZeroBatchSplitOrConsumerCount) {
  EXPECT_THROW(SplitPlan({.source_size = 10, .batch_size = 0}), InvalidArgument);
  EXPECT_THROW(SplitPlan({.source_size = 10, .consumers = 0}), InvalidArgument);
  EXPECT_THROW(SplitPlan({.source_size = 10, .split_batches = 0}), InvalidArgument);
  EXPECT_EQ(default_split_batches(256), 8u);
  EXPECT_EQ(default_split_batches(4096), 1u);
}

}  // namespace
}  // namespace conveyor::service::detail
