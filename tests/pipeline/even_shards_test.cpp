// Splitting epochs across ranks so that every rank gets the same number of elements and batches
// (ShardRemainder pad and drop), whatever the data set size, world size, failures and filters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/iterator_state.h"
#include "conveyor/random.h"
#include "fixtures.h"

namespace conveyor {
namespace {

using testing::number_of;
using testing::numbered_memory;

constexpr ImageShape kNumberShape{1, 8, 1};

// Writes the element's number (the 8 bytes of a numbered_memory buffer) as the sample's pixels.
SampleOp number_as_pixels() {
  return SampleOp{"number", [](Sample& sample) {
                    const ImageView out = sample.output(kNumberShape);
                    std::memcpy(out.data, sample.encoded.data(), 8);
                    sample.publish();
                  }};
}

std::uint64_t number_in(const Batch& batch, std::size_t i) {
  std::uint64_t value = 0;
  std::memcpy(&value, batch.image(i).data, sizeof value);
  return value;
}

// How many of a batch's samples are padding (SampleInfo::padding).
std::size_t padded(const Batch& batch) {
  const std::span<const SampleInfo> samples = batch.samples();
  return static_cast<std::size_t>(
      std::count_if(samples.begin(), samples.end(), [](const SampleInfo& s) { return s.padding; }));
}

struct Delivered {
  std::uint64_t number, epoch, index, seed;
  bool padding;
};

std::vector<Delivered> samples_of(const Dataset& dataset, int threads = 2) {
  std::vector<Delivered> out;
  for (const Sample& s : dataset.with_options({.threads = threads, .seed = 5}))
    out.push_back({number_of(s), s.epoch, s.index, s.seed, s.padding});
  return out;
}

struct RankBatches {
  std::size_t batches = 0;
  std::vector<std::uint64_t> real;     // numbers of the samples that are not padding
  std::vector<std::uint64_t> padding;  // numbers of the padding samples
};

RankBatches batches_of(const BatchedDataset& dataset) {
  RankBatches out;
  for (const Batch& batch : dataset) {
    ++out.batches;
    for (std::size_t i = 0; i < batch.size(); ++i)
      (batch.samples()[i].padding ? out.padding : out.real).push_back(number_in(batch, i));
  }
  return out;
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

TEST(EvenShards, EveryRankGetsTheSameBatchesAndTogetherEveryElementOnce) {
  constexpr std::size_t kBatch = 3;
  for (const ShardRemainder remainder : {ShardRemainder::pad, ShardRemainder::drop}) {
    for (std::size_t n = 1; n <= 40; ++n) {
      for (std::size_t world = 1; world <= 8; ++world) {
        const Dataset shuffled = numbered_memory(n, 1 << 20).shuffle(n, 11);
        std::vector<std::uint64_t> real;
        std::size_t padding = 0;
        std::set<std::size_t> batch_counts;
        for (std::size_t rank = 0; rank < world; ++rank) {
          const RankBatches got = batches_of(shuffled.shard(world, rank, remainder)
                                                 .map(number_as_pixels())
                                                 .with_options({.threads = 2})
                                                 .batch(kBatch, kNumberShape));
          batch_counts.insert(got.batches);
          const std::size_t per_rank = remainder == ShardRemainder::pad ? ceil_div(n, world) : n / world;
          ASSERT_EQ(got.real.size() + got.padding.size(), per_rank)
              << to_string(remainder) << " n=" << n << " world=" << world << " rank=" << rank;
          EXPECT_LE(got.padding.size(), 1u);
          real.insert(real.end(), got.real.begin(), got.real.end());
          padding += got.padding.size();
          for (const std::uint64_t p : got.padding) EXPECT_LT(p, n);
        }
        ASSERT_EQ(batch_counts.size(), 1u) << to_string(remainder) << " n=" << n << " world=" << world;
        std::sort(real.begin(), real.end());
        const std::size_t covered = remainder == ShardRemainder::pad ? n : n / world * world;
        EXPECT_EQ(std::adjacent_find(real.begin(), real.end()), real.end()) << "an element came twice";
        EXPECT_EQ(real.size(), covered) << to_string(remainder) << " n=" << n << " world=" << world;
        EXPECT_EQ(padding, remainder == ShardRemainder::pad ? ceil_div(n, world) * world - n : 0u);
      }
    }
  }
}

TEST(EvenShards, DropLeavesOutTheEpochsLastElements) {
  // n = 10 over 4 ranks: two each; positions 8 and 9 of the order are left out.
  std::vector<std::uint64_t> all;
  const Dataset shuffled = numbered_memory(10).shuffle(10, 3);
  const std::vector<Delivered> order = samples_of(shuffled);
  for (std::size_t rank = 0; rank < 4; ++rank)
    for (const Delivered& d : samples_of(shuffled.shard(4, rank, ShardRemainder::drop))) {
      EXPECT_EQ(d.index % 4, rank);
      EXPECT_FALSE(d.padding);
      all.push_back(d.index);
    }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(EvenShards, PadRepeatsWhatTorchsDistributedSamplerWouldAndKeepsTheRepeatedElementsSeed) {
  // n = 10 over 4 ranks: the padded order has 12 positions; 10 and 11 repeat elements 0 and 1 of the
  // epoch's order and go to ranks 2 and 3.
  const Dataset shuffled = numbered_memory(10).shuffle(10, 3);
  const std::vector<Delivered> order = samples_of(shuffled);
  for (std::size_t rank = 0; rank < 4; ++rank) {
    const std::vector<Delivered> got = samples_of(shuffled.shard(4, rank, ShardRemainder::pad));
    ASSERT_EQ(got.size(), 3u);
    for (std::size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(got[k].index, rank + 4 * k);
      EXPECT_EQ(got[k].number, order[rank + 4 * k].number);
    }
    const Delivered& last = got[2];
    if (rank < 2) {
      EXPECT_FALSE(last.padding);
      EXPECT_EQ(last.index, rank + 8);
    } else {
      EXPECT_TRUE(last.padding);
      const Delivered& original = order[rank - 2];
      EXPECT_EQ(last.index, original.index);
      EXPECT_EQ(last.number, original.number);
      EXPECT_EQ(last.seed, original.seed);
    }
  }
}

TEST(EvenShards, AWorldLargerThanTheEpochRepeatsFromItsStart) {
  // n = 3 over 8 ranks: ranks 3..7 repeat elements 0, 1, 2, 0, 1.
  for (std::size_t rank = 0; rank < 8; ++rank) {
    const std::vector<Delivered> got = samples_of(numbered_memory(3).shard(8, rank, ShardRemainder::pad));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].number, rank % 3);
    EXPECT_EQ(got[0].padding, rank >= 3);
    EXPECT_TRUE(samples_of(numbered_memory(3).shard(8, rank, ShardRemainder::drop)).empty());
  }
}

TEST(EvenShards, EveryEpochIsEvenedOutWhetherTheSplitComesBeforeOrAfterRepeat) {
  const Dataset shuffled = numbered_memory(7).shuffle(7, 9);
  for (std::size_t rank = 0; rank < 3; ++rank) {
    const std::vector<Delivered> after = samples_of(shuffled.repeat(3).shard(3, rank, ShardRemainder::pad));
    const std::vector<Delivered> before = samples_of(shuffled.shard(3, rank, ShardRemainder::pad).repeat(3));
    ASSERT_EQ(after.size(), 9u);
    ASSERT_EQ(before.size(), 9u);
    for (std::size_t i = 0; i < 9; ++i) {
      EXPECT_EQ(after[i].epoch, i / 3);
      EXPECT_EQ(after[i].number, before[i].number);
      EXPECT_EQ(after[i].seed, before[i].seed);
      EXPECT_EQ(after[i].padding, before[i].padding);
      EXPECT_EQ(after[i].padding, rank > 0 && i % 3 == 2);  // 7 = 3 + 2 + 2
    }
  }
}

TEST(EvenShards, RanksFromTheEnvironmentPickTheirShare) {
  const Dataset shuffled = numbered_memory(9).shuffle(9, 1);
  Ranks ranks;
  ranks.world_size = 2;
  ranks.rank = 1;
  std::vector<std::uint64_t> by_ranks, by_numbers;
  for (const Delivered& d : samples_of(shuffled.shard(ranks))) by_ranks.push_back(d.number);
  for (const Delivered& d : samples_of(shuffled.shard(2, 1, ShardRemainder::pad)))
    by_numbers.push_back(d.number);
  EXPECT_EQ(by_ranks, by_numbers);
  EXPECT_EQ(by_ranks.size(), 5u);
  ranks.rank = 2;
  EXPECT_THROW(shuffled.shard(ranks), InvalidArgument);
}

bool fails_on_three(std::uint64_t seed) {
  // Fails on the elements whose seed is one of three fixed elements' seeds (elements 2, 5 and 11).
  for (const std::uint64_t index : {2u, 5u, 11u})
    if (seed == sample_seed(0, 0, index)) return true;
  return false;
}

TEST(EvenShards, FailuresUnderSkipBecomePaddingSoTheBatchCountHolds) {
  // 23 elements over 2 ranks, batches of 4: 12 each (rank 1 repeats element 0). Element 2 fails on rank 0
  // (even positions), elements 5 and 11 on rank 1.
  std::set<std::uint64_t> real;
  for (std::size_t rank = 0; rank < 2; ++rank) {
    const BatchedDataset batches = numbered_memory(23, 1 << 20)
                                       .shard(2, rank, ShardRemainder::pad)
                                       .map(testing::throw_when(fails_on_three))
                                       .map(number_as_pixels())
                                       .with_options({.threads = 3, .on_error = OnError::skip})
                                       .batch(4, kNumberShape);
    BatchIterator it = batches.begin();
    std::vector<std::size_t> sizes;
    std::size_t holes = 0, repeats = 0;
    while (std::optional<Batch> batch = it.next()) {
      sizes.push_back(batch->size());
      for (std::size_t i = 0; i < batch->size(); ++i) {
        if (!batch->samples()[i].padding) {
          EXPECT_TRUE(real.insert(number_in(*batch, i)).second);
          continue;
        }
        // A hole is a copy of a kept sample of its batch, label and all; a repeat comes from the order.
        bool copy_of_a_kept_sample = false;
        for (std::size_t j = 0; j < batch->size(); ++j)
          copy_of_a_kept_sample |= !batch->samples()[j].padding &&
                                   number_in(*batch, j) == number_in(*batch, i) &&
                                   batch->labels()[j] == batch->labels()[i];
        ++(copy_of_a_kept_sample ? holes : repeats);
      }
    }
    EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 4, 4})) << "rank " << rank;
    EXPECT_EQ(holes, rank == 0 ? 1u : 2u) << "rank " << rank;
    EXPECT_EQ(repeats, rank == 0 ? 0u : 1u) << "rank " << rank;
    EXPECT_EQ(it.stats().skipped, holes);
  }
  EXPECT_EQ(real.size(), 20u);  // 23 - 3 failed
  for (const std::uint64_t failed : {2u, 5u, 11u}) EXPECT_EQ(real.count(failed), 0u);
}

TEST(EvenShards, ABatchWithNothingKeptIsPaddedFromAnEarlierOne) {
  // Rank 0 of 2 gets 0, 2, 4, 6, 8, 10; in batches of 2 the second one (4 and 6) is filtered away.
  const BatchedDataset batches =
      numbered_memory(12, 1 << 20)
          .shard(2, 0, ShardRemainder::pad)
          .map(number_as_pixels())
          .filter([](const Sample& s) { return number_of(s) != 4 && number_of(s) != 6; })
          .with_options({.threads = 2})
          .batch(2, kNumberShape);
  std::vector<std::vector<std::uint64_t>> numbers;
  std::vector<std::vector<bool>> flags;
  for (const Batch& batch : batches) {
    numbers.emplace_back();
    flags.emplace_back();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      numbers.back().push_back(number_in(batch, i));
      flags.back().push_back(batch.samples()[i].padding);
    }
    EXPECT_EQ(padded(batch),
              static_cast<std::size_t>(std::count(flags.back().begin(), flags.back().end(), true)));
  }
  ASSERT_EQ(numbers.size(), 3u);
  EXPECT_EQ(numbers[1], (std::vector<std::uint64_t>{0, 0}));  // the first kept sample of batch 0
  EXPECT_EQ(flags[1], (std::vector<bool>{true, true}));
  EXPECT_EQ(numbers[2], (std::vector<std::uint64_t>{8, 10}));
  EXPECT_EQ(flags[0], (std::vector<bool>{false, false}));
}

TEST(EvenShards, OneRankClosesGapsAsWithoutASplit) {
  // With a world of one there is nothing to even out: a filtered element leaves no padding.
  std::vector<std::size_t> sizes;
  for (const Batch& batch : numbered_memory(6, 1 << 20)
                                .shard(1, 0, ShardRemainder::pad)
                                .map(number_as_pixels())
                                .filter([](const Sample& s) { return number_of(s) != 2; })
                                .with_options({.threads = 2})
                                .batch(2, kNumberShape)) {
    sizes.push_back(batch.size());
    EXPECT_EQ(padded(batch), 0u);
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{2, 2, 1}));
}

TEST(EvenShards, DropRemainderStillDropsTheLastPartialBatch) {
  std::vector<std::size_t> sizes;
  for (const Batch& batch : numbered_memory(11, 1 << 20)
                                .shard(2, 0, ShardRemainder::pad)
                                .map(number_as_pixels())
                                .with_options({.threads = 2})
                                .batch(4, kNumberShape, /*drop_remainder=*/true))
    sizes.push_back(batch.size());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4}));  // 6 elements: one full batch
}

TEST(EvenShards, BatchesOfAnUnevenSplitHaveNoPadding) {
  for (const Batch& batch : numbered_memory(9).shard(2, 1).map(number_as_pixels()).batch(4, kNumberShape)) {
    EXPECT_EQ(padded(batch), 0u);
    EXPECT_EQ(batch.samples().size(), batch.size());
  }
}

// Every batch an iterator gives, as (epoch, index, padding, number) per sample, up to `count` batches.
using Seen = std::vector<std::tuple<std::uint64_t, std::uint64_t, bool, std::uint64_t>>;

std::vector<Seen> take_batches(BatchIterator& it, long count = -1) {
  std::vector<Seen> out;
  for (long b = 0; count < 0 || b < count; ++b) {
    std::optional<Batch> batch = it.next();
    if (!batch) break;
    Seen seen;
    for (std::size_t i = 0; i < batch->size(); ++i)
      seen.emplace_back(batch->samples()[i].epoch, batch->samples()[i].index, batch->samples()[i].padding,
                        number_in(*batch, i));
    out.push_back(std::move(seen));
  }
  return out;
}

TEST(EvenShards, AStateResumesARanksShareWhereverItStoppedPaddingAndDroppingAsBefore) {
  for (const ShardRemainder remainder : {ShardRemainder::pad, ShardRemainder::drop}) {
    for (const bool shard_first : {true, false}) {  // shard then repeat (the usual), or repeat then shard
      for (std::size_t rank = 0; rank < 3; ++rank) {
        auto make = [&](int threads) {
          const Dataset shuffled = numbered_memory(17, 1 << 20).shuffle();
          const Dataset ordered = shard_first ? shuffled.shard(3, rank, remainder).repeat(2)
                                              : shuffled.repeat(2).shard(3, rank, remainder);
          return ordered.map(number_as_pixels())
              .with_options({.threads = threads, .seed = 8})
              .batch(2, kNumberShape);
        };
        const std::string what = std::string(to_string(remainder)) +
                                 (shard_first ? ", shard, repeat" : ", repeat, shard") + ", rank " +
                                 std::to_string(rank);
        BatchIterator reference_it = make(1).begin();
        const std::vector<Seen> reference = take_batches(reference_it);
        ASSERT_GE(reference.size(), 5u) << what;
        for (std::size_t cut = 0; cut <= reference.size(); ++cut) {
          std::string saved;
          {
            BatchIterator first = make(3).begin();
            take_batches(first, static_cast<long>(cut));
            saved = first.state().to_json();
          }
          BatchIterator resumed = make(2).begin(IteratorState::from_json(saved));
          EXPECT_EQ(take_batches(resumed),
                    std::vector<Seen>(reference.begin() + static_cast<long>(cut), reference.end()))
              << what << ", resumed after " << cut << " batches";
        }
      }
    }
  }
}

TEST(EvenShards, AnEvenSplitRefusesAnElasticRestoreSayingWhy) {
  auto sharded = [](std::size_t world, std::size_t rank) {
    return numbered_memory(20, 1 << 20)
        .shuffle()
        .shard(world, rank, ShardRemainder::pad)
        .map(number_as_pixels())
        .with_options({.threads = 2, .seed = 8})
        .batch(2, kNumberShape);
  };
  std::vector<IteratorState> states;
  for (std::size_t rank = 0; rank < 2; ++rank) {
    BatchIterator it = sharded(2, rank).begin();
    take_batches(it, 2);
    states.push_back(it.state());
  }
  try {
    (void)IteratorState::combine(states);
    FAIL() << "the states of an even split were combined for an elastic restore";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("pad and drop"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace conveyor
