// Which elements a dataset yields and in what order: shuffle, repeat, shard, skip, take, filter.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/random.h"
#include "fixtures.h"

namespace conveyor {
namespace {

using testing::number_of;
using testing::numbered_memory;

struct Seen {
  std::uint64_t number, epoch, index, seed;
  friend bool operator==(const Seen&, const Seen&) = default;
};

std::vector<Seen> run(const Dataset& dataset, const PipelineOptionChanges& options = {.threads = 3}) {
  std::vector<Seen> seen;
  for (const Sample& s : dataset.with_options(options))
    seen.push_back({number_of(s), s.epoch, s.index, s.seed});
  return seen;
}

std::vector<std::uint64_t> numbers(const std::vector<Seen>& seen) {
  std::vector<std::uint64_t> out;
  for (const Seen& s : seen) out.push_back(s.number);
  return out;
}

std::vector<std::uint64_t> iota(std::uint64_t from, std::uint64_t to) {
  std::vector<std::uint64_t> out(to - from);
  std::iota(out.begin(), out.end(), from);
  return out;
}

TEST(Order, WithoutShuffleElementsComeInSourceOrderWithTheirSeeds) {
  const std::vector<Seen> seen = run(numbered_memory(20), {.threads = 4, .seed = 99});
  ASSERT_EQ(seen.size(), 20u);
  for (std::uint64_t i = 0; i < 20; ++i) {
    EXPECT_EQ(seen[i].number, i);
    EXPECT_EQ(seen[i].index, i);
    EXPECT_EQ(seen[i].epoch, 0u);
    EXPECT_EQ(seen[i].seed, sample_seed(99, 0, i));
  }
}

TEST(Shuffle, IsAPermutationWithTheIndexAsItsPosition) {
  for (const std::size_t buffer : {1u, 7u, 64u, 1000u}) {
    const std::vector<Seen> seen = run(numbered_memory(100).shuffle(buffer, 5));
    std::vector<std::uint64_t> sorted = numbers(seen);
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, iota(0, 100)) << "buffer " << buffer;
    for (std::uint64_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].index, i);
    if (buffer == 1) {
      EXPECT_EQ(numbers(seen), iota(0, 100));
    }
    if (buffer >= 64) {
      EXPECT_NE(numbers(seen), iota(0, 100));
    }
  }
}

TEST(Shuffle, DiffersPerEpochAndPerSeedAndRepeatsForTheSameSeed) {
  const std::vector<Seen> seen = run(numbered_memory(50).shuffle(50, 1).repeat(3));
  ASSERT_EQ(seen.size(), 150u);
  std::vector<std::vector<std::uint64_t>> epochs(3);
  for (const Seen& s : seen) epochs[s.epoch].push_back(s.number);
  for (auto& epoch : epochs) ASSERT_EQ(epoch.size(), 50u);
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  for (auto epoch : epochs) {
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, iota(0, 50));
  }
  EXPECT_EQ(numbers(run(numbered_memory(50).shuffle(50, 1))), std::vector<std::uint64_t>(epochs[0]));
  EXPECT_NE(numbers(run(numbered_memory(50).shuffle(50, 2))),
            numbers(run(numbered_memory(50).shuffle(50, 1))));
}

TEST(Shard, ShardsPartitionEveryEpochAndKeepTheGlobalIndexAndSeed) {
  const Dataset shuffled = numbered_memory(61).shuffle(16, 3).repeat(2);
  const std::vector<Seen> whole = run(shuffled);
  std::vector<Seen> union_of_shards;
  for (std::size_t k = 0; k < 4; ++k) {
    for (const Seen& s : run(shuffled.shard(4, k))) {
      EXPECT_EQ(s.index % 4, k);
      union_of_shards.push_back(s);
    }
  }
  ASSERT_EQ(union_of_shards.size(), whole.size());
  auto key = [](const Seen& a, const Seen& b) {
    return std::tie(a.epoch, a.index) < std::tie(b.epoch, b.index);
  };
  std::sort(union_of_shards.begin(), union_of_shards.end(), key);
  std::vector<Seen> sorted_whole = whole;
  std::sort(sorted_whole.begin(), sorted_whole.end(), key);
  EXPECT_EQ(union_of_shards, sorted_whole);  // same elements, same seeds: one global order
}

TEST(Shard, RejectsAnIndexOutOfRange) {
  EXPECT_THROW(numbered_memory(4).shard(2, 2), InvalidArgument);
  EXPECT_THROW(numbered_memory(4).shard(0, 0), InvalidArgument);
}

TEST(SkipTake, SkipAndTakeCutTheStream) {
  EXPECT_EQ(numbers(run(numbered_memory(10).take(4))), iota(0, 4));
  EXPECT_EQ(numbers(run(numbered_memory(10).skip(7))), iota(7, 10));
  EXPECT_EQ(numbers(run(numbered_memory(10).skip(2).take(3))), iota(2, 5));
  EXPECT_TRUE(run(numbered_memory(10).skip(20)).empty());
  EXPECT_EQ(numbers(run(numbered_memory(10).take(20))), iota(0, 10));
  EXPECT_TRUE(run(numbered_memory(10).take(0)).empty());
}

TEST(SkipTake, BeforeRepeatTheyActPerEpochAfterItOnTheWholeStream) {
  const std::vector<Seen> per_epoch = run(numbered_memory(10).take(2).repeat(3));
  EXPECT_EQ(numbers(per_epoch), (std::vector<std::uint64_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(per_epoch.back().epoch, 2u);
  EXPECT_EQ(numbers(run(numbered_memory(10).repeat(3).take(12))),
            (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));
  EXPECT_EQ(numbers(run(numbered_memory(4).repeat(2).skip(3))), (std::vector<std::uint64_t>{3, 0, 1, 2, 3}));
}

TEST(Repeat, CountsEpochsAndForeverNeedsATake) {
  EXPECT_TRUE(run(numbered_memory(5).repeat(0)).empty());
  const std::vector<Seen> seen = run(numbered_memory(10).repeat().take(25));
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_EQ(seen[24].epoch, 2u);
  EXPECT_EQ(seen[24].number, 4u);
  EXPECT_EQ(seen[24].index, 4u);                           // the index restarts every epoch
  EXPECT_TRUE(run(Dataset::memory({}).repeat()).empty());  // an empty dataset repeated forever ends
}

TEST(Repeat, NestedRepeatsNumberEpochsOuterTimesInnerPlusInner) {
  const std::vector<Seen> seen = run(numbered_memory(2).repeat(2).repeat(3));
  ASSERT_EQ(seen.size(), 12u);
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].epoch, i / 2);
}

TEST(Filter, KeepsOnlyWhatThePredicateAccepts) {
  const Dataset odd = numbered_memory(20).filter([](const Sample& s) { return number_of(s) % 2 == 1; });
  std::vector<std::uint64_t> expected;
  for (std::uint64_t i = 1; i < 20; i += 2) expected.push_back(i);
  EXPECT_EQ(numbers(run(odd)), expected);
  const std::vector<Seen> twice = run(odd.repeat(2));  // repeat commutes with filter
  EXPECT_EQ(twice.size(), 20u);
}

TEST(Filter, OrderingAfterAFilterIsRejected) {
  const Dataset filtered = numbered_memory(5).filter([](const Sample&) { return true; });
  EXPECT_THROW(filtered.shuffle(4, 1), InvalidArgument);
  EXPECT_THROW(filtered.shard(2, 0), InvalidArgument);
  EXPECT_THROW(filtered.take(2), InvalidArgument);
  EXPECT_THROW(filtered.skip(2), InvalidArgument);
}

TEST(Map, RunsInOrderOnEveryElementAndCommutesWithOrdering) {
  auto tag = [](char c) { return SampleOp{std::string(1, c), [c](Sample& s) { s.path.push_back(c); }}; };
  std::vector<std::string> paths;
  for (const Sample& s : numbered_memory(3).map(tag('a')).map(tag('b')).with_options({.threads = 2}))
    paths.push_back(s.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"<memory:0>ab", "<memory:1>ab", "<memory:2>ab"}));

  const ImageShape shape{4, 4, 3};
  auto pixels = [&](const Dataset& d) {
    std::vector<std::vector<std::uint8_t>> out;
    for (const Sample& s : d.with_options({.threads = 2, .seed = 8})) {
      const ConstImageView image = s.image();
      out.emplace_back(image.data, image.data + image.shape().bytes());
    }
    return out;
  };
  EXPECT_EQ(pixels(numbered_memory(30).map(testing::fill_from_seed(shape)).shuffle(10, 4)),
            pixels(numbered_memory(30).shuffle(10, 4).map(testing::fill_from_seed(shape))));
}

TEST(Map, AnOpWithoutAFunctionIsRejected) {
  EXPECT_THROW(numbered_memory(2).map(SampleOp{"empty", {}}), InvalidArgument);
}

TEST(Dataset, IsAnImmutableValueWithManyIndependentIterators) {
  const Dataset base = numbered_memory(10);
  const Dataset shuffled = base.shuffle(10, 1);
  EXPECT_EQ(numbers(run(base)), iota(0, 10));  // deriving did not change the base
  SampleIterator a = shuffled.begin();
  SampleIterator b = shuffled.begin();
  std::vector<std::uint64_t> from_a, from_b;
  while (auto s = a.next()) {
    from_a.push_back(number_of(*s));
    if (auto t = b.next()) from_b.push_back(number_of(*t));
  }
  EXPECT_EQ(from_a, from_b);
  EXPECT_EQ(from_a.size(), 10u);
}

TEST(Dataset, NonDeterministicDeliveryKeepsTheSameElements) {
  const Dataset d = numbered_memory(200).shuffle(50, 2).map(testing::fill_from_seed({8, 8, 3}));
  std::vector<Seen> ordered = run(d, {.threads = 4});
  std::vector<Seen> any = run(d, {.threads = 4, .deterministic = false});
  auto key = [](const Seen& a, const Seen& b) { return a.index < b.index; };
  std::sort(any.begin(), any.end(), key);
  EXPECT_EQ(any, ordered);
}

}  // namespace
}  // namespace conveyor
