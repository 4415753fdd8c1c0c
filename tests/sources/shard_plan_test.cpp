// Which samples of which shards each rank reads in an epoch: contiguous balanced ranges of the epoch's
// order, covering every sample once, evened out by the remainder policy, at any shard sizes and world size.
#include "src/sources/shard_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "conveyor/error.h"
#include "conveyor/random.h"

namespace conveyor::detail {
namespace {

using Counts = std::vector<std::optional<std::uint64_t>>;

// The epoch positions a plan reads, with each one's (shard, sample) and padding flag.
struct Read {
  std::uint64_t index;
  std::size_t shard;
  std::uint64_t sample;
  bool padding;
};

std::vector<Read> reads_of(const std::vector<Segment>& segments) {
  std::vector<Read> out;
  for (const Segment& segment : segments)
    for (std::uint64_t k = segment.first; k < *segment.end; ++k)
      out.push_back({*segment.index + (k - segment.first), segment.shard, k, segment.padding});
  return out;
}

TEST(ShardOrder, IsAPermutationPerEpochThatRepeatsForTheSameSeed) {
  const std::vector<std::size_t> a = shard_order(50, true, 7, 0);
  std::vector<std::size_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> identity(50);
  std::iota(identity.begin(), identity.end(), std::size_t{0});
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(a, identity);
  EXPECT_EQ(a, shard_order(50, true, 7, 0));
  EXPECT_NE(a, shard_order(50, true, 7, 1));
  EXPECT_NE(a, shard_order(50, true, 8, 0));
  EXPECT_EQ(shard_order(50, false, 7, 3), identity);
}

TEST(ShardPlan, RanksSplitEveryEpochEvenlyAndCoverEverySampleOnce) {
  Rng rng(99);
  for (int trial = 0; trial < 60; ++trial) {
    const std::size_t shards = 1 + rng.below(12);
    Counts counts;
    std::vector<std::uint64_t> start;  // position of each shard's first sample in the epoch's order
    for (std::size_t s = 0; s < shards; ++s) counts.push_back(rng.below(6));  // empty shards too
    const std::vector<std::size_t> order = shard_order(shards, true, 3, static_cast<std::uint64_t>(trial));
    std::map<std::size_t, std::uint64_t> first_position;
    std::uint64_t n = 0;
    for (const std::size_t s : order) {
      first_position[s] = n;
      n += *counts[s];
    }
    for (int world = 1; world <= 8; ++world) {
      for (const ShardRemainder remainder :
           {ShardRemainder::pad, ShardRemainder::drop, ShardRemainder::uneven}) {
        std::multiset<std::uint64_t> real;
        std::set<std::size_t> lengths;
        std::size_t padding = 0;
        for (int rank = 0; rank < world; ++rank) {
          const std::vector<Segment> segments = plan_epoch(counts, order, rank, world, remainder);
          const std::vector<Read> reads = reads_of(segments);
          lengths.insert(reads.size());
          std::size_t partial = 0;
          for (const Segment& segment : segments)
            partial += !segment.padding && (segment.first > 0 || *segment.end < *counts[segment.shard]);
          EXPECT_LE(partial, 2u) << "a rank shares at most one shard at each end of its range";
          std::uint64_t previous = 0;
          bool first = true;
          for (const Read& read : reads) {
            EXPECT_EQ(read.index, first_position[read.shard] + read.sample)
                << "the index is the epoch position";
            if (read.padding) {
              ++padding;
              continue;
            }
            if (!first) {
              EXPECT_EQ(read.index, previous + 1) << "a rank's range is contiguous";
            }
            previous = read.index;
            first = false;
            real.insert(read.index);
          }
        }
        const std::uint64_t w = static_cast<std::uint64_t>(world);
        const std::string what =
            "n=" + std::to_string(n) + " world=" + std::to_string(world) + " " + to_string(remainder);
        if (remainder == ShardRemainder::uneven) {
          EXPECT_LE(*lengths.rbegin() - *lengths.begin(), 1u) << what;
        } else {
          EXPECT_EQ(lengths.size(), 1u) << what;
          EXPECT_EQ(*lengths.begin(), remainder == ShardRemainder::pad ? (n + w - 1) / w : n / w) << what;
        }
        const std::uint64_t covered = remainder == ShardRemainder::drop ? n / w * w : n;
        ASSERT_EQ(real.size(), covered) << what;
        std::uint64_t expected = 0;
        for (const std::uint64_t index : real) EXPECT_EQ(index, expected++) << what;
        EXPECT_EQ(padding, remainder == ShardRemainder::pad && n > 0 ? (n + w - 1) / w * w - n : 0u) << what;
      }
    }
  }
}

TEST(ShardPlan, AShortRankRepeatsASampleFromTheEpochsStart) {
  // Shards of 4, 3 and 3 samples, in order; 10 over 4 ranks: 3, 3, 2 + 1, 2 + 1.
  const Counts counts{4, 3, 3};
  const std::vector<std::size_t> order{0, 1, 2};
  const std::vector<Read> rank2 = reads_of(plan_epoch(counts, order, 2, 4, ShardRemainder::pad));
  ASSERT_EQ(rank2.size(), 3u);
  EXPECT_EQ(rank2[0].index, 6u);
  EXPECT_EQ(rank2[1].index, 7u);
  EXPECT_TRUE(rank2[2].padding);
  EXPECT_EQ(rank2[2].index, 0u);
  const std::vector<Read> rank3 = reads_of(plan_epoch(counts, order, 3, 4, ShardRemainder::pad));
  ASSERT_EQ(rank3.size(), 3u);
  EXPECT_EQ(rank3[2].index, 1u);
  EXPECT_EQ(rank3[0].shard, 2u);
  EXPECT_EQ(rank3[0].sample, 1u);
}

TEST(ShardPlan, OnlyTheSegmentThatReachesItsShardsEndChecksIt) {
  const std::vector<Segment> rank0 = plan_epoch({4, 3}, {0, 1}, 0, 2, ShardRemainder::pad);
  ASSERT_EQ(rank0.size(), 1u);
  EXPECT_EQ(*rank0[0].end, 4u);
  EXPECT_TRUE(rank0[0].to_shard_end);
  const std::vector<Segment> rank1 = plan_epoch({4, 3}, {0, 1}, 1, 2, ShardRemainder::pad);
  ASSERT_EQ(rank1.size(), 2u);
  EXPECT_TRUE(rank1[0].to_shard_end);
  EXPECT_TRUE(rank1[1].padding);
  EXPECT_FALSE(rank1[1].to_shard_end);
}

TEST(ShardPlan, UnknownCountsReadWholeShardsWithOneRankOnly) {
  const Counts counts{std::nullopt, 5, std::nullopt};
  const std::vector<Segment> segments = plan_epoch(counts, {2, 0, 1}, 0, 1, ShardRemainder::pad);
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[0].shard, 2u);
  EXPECT_FALSE(segments[0].end.has_value());
  EXPECT_FALSE(segments[0].index.has_value());
  EXPECT_EQ(*segments[2].end, 5u);
  EXPECT_TRUE(segments[2].to_shard_end);
  EXPECT_THROW(plan_epoch(counts, {0, 1, 2}, 0, 2, ShardRemainder::pad), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::detail
