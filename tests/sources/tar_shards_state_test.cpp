// Iterator states over tar shards: a stream has no random access, so its state is (epoch, samples
// emitted) and a restore reads the epoch's shards again up to there. What is checked: the rest of a run
// resumed anywhere is the uninterrupted run's, bit for bit (shuffled shards, a shuffle buffer, repeats,
// ranks with padding; shards read at random, as a table); a state refuses other shards and another rank; the
// whole-epoch shuffle of a stream is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/batch_checksum.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/iterator_state.h"
#include "fixtures.h"
#include "support/tar_files.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using testing::TempDir;

constexpr ImageShape kShape{2, 3, 3};

// What a batch was: its number, who is in it (epoch, index, padding), and its bytes.
struct Delivered {
  std::uint64_t sequence = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> elements;
  std::vector<bool> padding;
  std::uint64_t checksum = 0;
  friend bool operator==(const Delivered&, const Delivered&) = default;
};

// Takes up to `count` batches from `it` (all when count is -1).
std::vector<Delivered> take(BatchIterator& it, long count = -1) {
  std::vector<Delivered> out;
  for (long i = 0; count < 0 || i < count; ++i) {
    std::optional<Batch> batch = it.next();
    if (!batch) break;
    Delivered d{batch->sequence(), {}, {}, 0};
    for (const SampleInfo& info : batch->samples()) {
      d.elements.emplace_back(info.epoch, info.index);
      d.padding.push_back(info.padding);
    }
    BatchChecksum sum;
    sum.add(*batch);
    d.checksum = sum.value();
    out.push_back(std::move(d));
  }
  return out;
}

BatchedDataset batches(const Dataset& ordered, int threads) {
  return ordered.map(testing::fill_from_seed(kShape)).with_options({.threads = threads, .seed = 6}).batch(3);
}

struct Chain {
  const char* name;
  Dataset (*make)(const std::vector<std::string>& shards);
};

TarShardOptions rank(int r, int world) {
  TarShardOptions options;
  options.seed = 21;
  options.ranks = {.rank = r, .world_size = world};
  options.remainder = ShardRemainder::pad;
  options.parallel_shards = 2;
  options.queued_samples = 2;
  return options;
}

const Chain kChains[] = {
    {"shuffled shards, repeat", [](const auto& s) { return Dataset::tar_shards(s, rank(0, 1)).repeat(2); }},
    {"shuffle buffer, repeat",
     [](const auto& s) { return Dataset::tar_shards(s, rank(0, 1)).shuffle(5).repeat(2); }},
    {"rank 1 of 3, padded, shuffle buffer",
     [](const auto& s) { return Dataset::tar_shards(s, rank(1, 3)).shuffle(4).repeat(2); }},
    {"one rank, shard(2, 1) of its stream",
     [](const auto& s) { return Dataset::tar_shards(s, rank(0, 1)).repeat(2).shard(2, 1); }},
    // Read at random the shards are a table: its state is a file table's (whole-epoch shuffle, ranks).
    {"read at random, whole-epoch shuffle, rank 1 of 2",
     [](const auto& s) {
       TarShardOptions options;
       options.random_access = true;
       return Dataset::tar_shards(s, options).shuffle().shard(Ranks{.rank = 1, .world_size = 2}).repeat(2);
     }},
};

void PrintTo(const Chain& chain, std::ostream* out) { *out << chain.name; }

class TarShardsResume : public ::testing::TestWithParam<Chain> {};

TEST_P(TarShardsResume, TheRestIsBitForBitAnUninterruptedRunsWhereverItStopped) {
  testing::Watchdog watchdog(std::chrono::seconds(120), "tar shards resumed at every batch");
  const Chain& chain = GetParam();
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {5, 4, 7, 3});
  BatchIterator reference_it = batches(chain.make(shards), 1).begin();
  const std::vector<Delivered> reference = take(reference_it);
  ASSERT_GT(reference.size(), 3u) << chain.name;
  for (std::size_t cut = 0; cut <= reference.size(); ++cut) {
    std::string saved;
    {
      BatchIterator first = batches(chain.make(shards), 3).begin();
      ASSERT_EQ(take(first, static_cast<long>(cut)),
                std::vector<Delivered>(reference.begin(), reference.begin() + static_cast<long>(cut)))
          << chain.name;
      saved = first.state().to_json();
    }
    BatchIterator resumed = batches(chain.make(shards), 2).begin(IteratorState::from_json(saved));
    EXPECT_EQ(take(resumed),
              std::vector<Delivered>(reference.begin() + static_cast<long>(cut), reference.end()))
        << chain.name << ", resumed after " << cut << " batches";
  }
}

INSTANTIATE_TEST_SUITE_P(Chains, TarShardsResume, ::testing::ValuesIn(kChains),
                         [](const auto& info) { return "chain" + std::to_string(info.index); });

// The saved state of a run over `shards` after two batches.
IteratorState state_after_two_batches(const Dataset& ordered) {
  BatchIterator it = batches(ordered, 2).begin();
  take(it, 2);
  return it.state();
}

TEST(TarShardsResume, AStateRefusesOtherShardsAndAnotherRank) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {5, 4, 7, 3});
  const IteratorState state = state_after_two_batches(Dataset::tar_shards(shards, rank(0, 2)).repeat(2));
  const std::vector<std::string> fewer(shards.begin(), shards.begin() + 3);
  for (const Dataset& other : {Dataset::tar_shards(fewer, rank(0, 2)).repeat(2),
                               Dataset::tar_shards(shards, rank(1, 2)).repeat(2)}) {
    try {
      batches(other, 2).begin(state);
      ADD_FAILURE() << "a state of other tar shards was taken";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("tar shards"), std::string::npos) << error.what();
    }
  }
}

TEST(TarShardsResume, AShardOfOneRanksStreamTakesAnElasticRestoreButTheSourcesOwnRankSplitDoesNot) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {5, 4, 7, 3});
  auto split = [&](int r, int world, std::size_t num_shards, std::size_t index) {
    return Dataset::tar_shards(shards, rank(r, world)).shard(num_shards, index);
  };
  // One rank reads the stream and shard() splits it: the rest of the epoch comes once over 3 new shards.
  const std::vector<IteratorState> two = {state_after_two_batches(split(0, 1, 2, 0)),
                                          state_after_two_batches(split(0, 1, 2, 1))};
  const IteratorState combined = IteratorState::combine(two);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> rest;
  for (std::size_t s = 0; s < 3; ++s) {
    BatchIterator it = batches(split(0, 1, 3, s), 2).begin(combined);
    for (const Delivered& d : take(it)) rest.insert(rest.end(), d.elements.begin(), d.elements.end());
  }
  std::sort(rest.begin(), rest.end());
  // 19 samples; shard 0 of 2 delivered indices 0, 2, ..., 10 and shard 1 indices 1, 3, ..., 11.
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> expected = {{0, 12}, {0, 13}, {0, 14}, {0, 15},
                                                                         {0, 16}, {0, 17}, {0, 18}};
  EXPECT_EQ(rest, expected);
  // The source's own split (TarShardOptions::ranks) cannot move its samples to other shards: refused.
  const std::vector<IteratorState> ranked = {state_after_two_batches(split(0, 2, 2, 0)),
                                             state_after_two_batches(split(0, 2, 2, 1))};
  try {
    batches(split(0, 2, 3, 0), 2).begin(IteratorState::combine(ranked));
    ADD_FAILURE() << "an elastic restore of tar shards split by ranks was taken";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("TarShardOptions::ranks"), std::string::npos) << error.what();
  }
}

TEST(TarShardsResume, TheWholeEpochShuffleIsRefusedForAStreamWithAReason) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {5, 4});
  try {
    (void)Dataset::tar_shards(shards).shuffle();
    FAIL() << "a whole-epoch shuffle over tar shards was accepted";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("tar shards"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("shuffle(buffer_size)"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace conveyor
