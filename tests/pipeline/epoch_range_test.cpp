// Dataset::epoch_range: one part of one epoch, made on its own, is exactly that part of an uninterrupted run
// (elements, indices, seeds, padding, pixels): what a data service's worker relies on to make any split
// anywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "conveyor/batch_checksum.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "fixtures.h"

namespace conveyor {
namespace {

using testing::number_of;
using testing::numbered_memory;

struct Element {
  std::uint64_t number, epoch, index, seed;
  bool padding;
  friend bool operator==(const Element&, const Element&) = default;
};

std::vector<Element> elements_of(const Dataset& dataset) {
  std::vector<Element> out;
  for (const Sample& s : dataset.with_options({.threads = 2, .seed = 11}))
    out.push_back({number_of(s), s.epoch, s.index, s.seed, s.padding});
  return out;
}

TEST(EpochRange, IsThatPartOfTheUninterruptedRunInEveryEpoch) {
  const Dataset files = numbered_memory(23).shuffle();
  const std::vector<Element> whole = elements_of(files.repeat(3));
  ASSERT_EQ(whole.size(), 69u);
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch)
    for (const auto& [first, count] :
         std::vector<std::pair<std::uint64_t, std::uint64_t>>{{0, 5}, {7, 9}, {20, 10}}) {
      const std::vector<Element> part = elements_of(files.epoch_range(epoch, first, count));
      const std::uint64_t expected = std::min<std::uint64_t>(count, 23 - first);
      ASSERT_EQ(part.size(), expected) << "epoch " << epoch << " first " << first;
      for (std::uint64_t i = 0; i < expected; ++i)
        EXPECT_EQ(part[i], whole[epoch * 23 + first + i]) << "epoch " << epoch << " position " << first + i;
    }
}

TEST(EpochRange, OfAnEvenShardMatchesTheShardPaddingIncluded) {
  // 23 elements over 4 ranks with pad: every rank gets 6, ranks 3 repeats one of the epoch's first elements.
  for (std::size_t rank = 0; rank < 4; ++rank) {
    const Dataset mine = numbered_memory(23).shuffle().shard(4, rank, ShardRemainder::pad);
    const std::vector<Element> whole = elements_of(mine.repeat(2));
    ASSERT_EQ(whole.size(), 12u) << "rank " << rank;
    std::vector<Element> parts;
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch)
      for (std::uint64_t first = 0; first < 6; first += 4)
        for (const Element& e : elements_of(mine.epoch_range(epoch, first, 4))) parts.push_back(e);
    EXPECT_EQ(parts, whole) << "rank " << rank;
  }
  // drop: 23 / 4 = 5 each, the last incomplete block left out.
  const Dataset dropped = numbered_memory(23).shuffle().shard(4, 3, ShardRemainder::drop);
  const std::vector<Element> both = elements_of(dropped.repeat(2));
  ASSERT_EQ(both.size(), 10u);
  EXPECT_EQ(elements_of(dropped.epoch_range(1, 0, 100)), std::vector<Element>(both.begin() + 5, both.end()));
}

// One BatchChecksum per batch.
std::vector<std::uint64_t> batch_checksums(const BatchedDataset& dataset) {
  std::vector<std::uint64_t> out;
  for (const Batch& batch : dataset) {
    BatchChecksum sum;
    sum.add(batch);
    out.push_back(sum.value());
  }
  return out;
}

TEST(EpochRange, MakesTheSameBatchesAsTheWholeRun) {
  const ImageShape shape{4, 4, 3};
  auto batches = [&](const Dataset& order) {
    return order.map(testing::fill_from_seed(shape)).with_options({.threads = 2, .seed = 3}).batch(8, shape);
  };
  const std::vector<std::uint64_t> whole = batch_checksums(batches(numbered_memory(40).shuffle().repeat(2)));
  ASSERT_EQ(whole.size(), 10u);
  std::vector<std::uint64_t> parts;
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch)
    for (std::uint64_t first = 0; first < 40; first += 16)
      for (std::uint64_t sum :
           batch_checksums(batches(numbered_memory(40).shuffle().epoch_range(epoch, first, 16))))
        parts.push_back(sum);
  EXPECT_EQ(parts, whole);
}

TEST(EpochRange, RefusesAStreamWithoutRandomAccessAndOrderingAfterIt) {
  EXPECT_THROW((void)numbered_memory(10).shuffle(4).epoch_range(0, 0, 2), InvalidArgument);
  EXPECT_THROW((void)numbered_memory(10).repeat().epoch_range(0, 0, 2), InvalidArgument);
  EXPECT_THROW((void)numbered_memory(10).repeat(2).shard(2, 0, ShardRemainder::pad).epoch_range(0, 0, 2),
               InvalidArgument);
  const Dataset range = numbered_memory(10).epoch_range(0, 2, 3);
  EXPECT_THROW((void)range.shuffle(), InvalidArgument);
  EXPECT_THROW((void)range.repeat(2), InvalidArgument);
  EXPECT_THROW((void)range.take(1), InvalidArgument);
  EXPECT_EQ(elements_of(range).size(), 3u);
  EXPECT_TRUE(elements_of(numbered_memory(10).epoch_range(0, 10, 3)).empty());
}

}  // namespace
}  // namespace conveyor
