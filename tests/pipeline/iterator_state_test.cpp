// An iterator's state starts another iterator where the first stood: the rest bit for bit at any thread
// count, the rest of the epoch exactly once at another shard count, and refusals that say what is wrong.
#include "conveyor/iterator_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "conveyor/batch_checksum.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "fixtures.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using testing::fill_from_seed;
using testing::numbered_memory;

constexpr ImageShape kShape{2, 3, 3};

// What a batch was: its number, who is in it, and its bytes.
struct Delivered {
  std::uint64_t sequence = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> elements;  // (epoch, index)
  std::uint64_t checksum = 0;
  friend bool operator==(const Delivered&, const Delivered&) = default;
};

Delivered describe(const Batch& batch) {
  Delivered d{batch.sequence(), {}, 0};
  for (const SampleInfo& info : batch.samples()) d.elements.emplace_back(info.epoch, info.index);
  BatchChecksum sum;
  sum.add(batch);
  d.checksum = sum.value();
  return d;
}

// Takes up to `count` batches from `it` (all when count is -1).
std::vector<Delivered> take(BatchIterator& it, long count = -1) {
  std::vector<Delivered> out;
  for (long i = 0; count < 0 || i < count; ++i) {
    std::optional<Batch> batch = it.next();
    if (!batch) break;
    out.push_back(describe(*batch));
  }
  return out;
}

// A dataset with holes (a filter drops every element whose number is 3 mod 5) and the given order.
BatchedDataset numbered(Dataset ordered, int threads, std::uint64_t seed = 11) {
  return ordered.map(fill_from_seed(kShape))
      .filter([](const Sample& s) { return testing::number_of(s) % 5 != 3; })
      .with_options({.threads = threads, .seed = seed})
      .batch(4)
      .prefetch(2);
}

struct Chain {
  const char* name;
  Dataset (*make)();
};

const Chain kChains[] = {
    {"whole-epoch shuffle, repeat", [] { return numbered_memory(37).shuffle().repeat(3); }},
    {"buffered shuffle, repeat", [] { return numbered_memory(37).shuffle(8).repeat(2); }},
    {"repeat, then buffered shuffle", [] { return numbered_memory(23).repeat(2).shuffle(10, 5); }},
    {"take, skip, shard, shuffle",
     [] { return numbered_memory(60).take(50).skip(3).shard(2, 1).shuffle().repeat(2); }},
    {"shuffle, repeat, shard", [] { return numbered_memory(41).shuffle().repeat(2).shard(3, 2); }},
    {"no ordering at all", [] { return numbered_memory(27); }},
};

void PrintTo(const Chain& chain, std::ostream* out) { *out << chain.name; }

class ResumeAnywhere : public ::testing::TestWithParam<Chain> {};

TEST_P(ResumeAnywhere, TheRestIsBitForBitAnUninterruptedRunsAtAnyThreadCount) {
  const Chain& chain = GetParam();
  BatchIterator reference_it = numbered(chain.make(), 1).begin();
  const std::vector<Delivered> reference = take(reference_it);
  ASSERT_GT(reference.size(), 4u) << chain.name;
  for (std::size_t cut = 0; cut <= reference.size(); ++cut) {
    std::string saved;
    {
      BatchIterator first = numbered(chain.make(), 3).begin();
      const std::vector<Delivered> head = take(first, static_cast<long>(cut));
      ASSERT_EQ(head, std::vector<Delivered>(reference.begin(), reference.begin() + cut)) << chain.name;
      saved = first.state().to_json();
    }
    const IteratorState state = IteratorState::from_json(saved);
    EXPECT_EQ(state.batches(), cut);
    BatchIterator resumed = numbered(chain.make(), 2).begin(state);
    const std::vector<Delivered> rest = take(resumed);
    EXPECT_EQ(rest, std::vector<Delivered>(reference.begin() + cut, reference.end()))
        << chain.name << ", resumed after " << cut << " batches";
  }
}

INSTANTIATE_TEST_SUITE_P(Chains, ResumeAnywhere, ::testing::ValuesIn(kChains),
                         [](const auto& info) { return "chain" + std::to_string(info.index); });

TEST(IteratorState, TheStartStateGivesTheWholeRun) {
  const BatchedDataset data = numbered(numbered_memory(30).shuffle().repeat(2), 2);
  BatchIterator plain = data.begin();
  BatchIterator from_start = data.begin(IteratorState{});
  EXPECT_EQ(take(from_start), take(plain));
  BatchIterator fresh = data.begin();
  EXPECT_EQ(fresh.state().batches(), 0u);
  BatchIterator again = data.begin(fresh.state());
  BatchIterator plain_again = data.begin();
  EXPECT_EQ(take(again), take(plain_again));
}

TEST(IteratorState, SampleIteratorsResumeToo) {
  const Dataset data = numbered_memory(25).shuffle(6).repeat(2).with_options({.threads = 3, .seed = 4});
  std::vector<std::uint64_t> all;
  for (const Sample& s : data) all.push_back(s.seed);
  SampleIterator first = data.begin();
  for (int i = 0; i < 17; ++i) ASSERT_TRUE(first.next());
  SampleIterator rest = data.begin(IteratorState::from_json(first.state().to_json()));
  std::vector<std::uint64_t> resumed;
  while (std::optional<Sample> s = rest.next()) resumed.push_back(s->seed);
  EXPECT_EQ(resumed, std::vector<std::uint64_t>(all.begin() + 17, all.end()));
}

TEST(IteratorState, AStateSurvivesAFileAndCountsWhatWasDelivered) {
  const testing::TempDir dir;
  const BatchedDataset data = numbered(numbered_memory(40).shuffle().repeat(2), 2);
  BatchIterator it = data.begin();
  const std::vector<Delivered> head = take(it, 9);
  it.state().save(dir / "state.json");
  const IteratorState loaded = IteratorState::load(dir / "state.json");
  EXPECT_EQ(loaded.batches(), 9u);
  EXPECT_EQ(loaded.elements(), 36u);
  EXPECT_EQ(loaded.epoch(), head.back().elements.back().first);
  EXPECT_FALSE(std::filesystem::exists(dir / "state.json.tmp"));
  BatchIterator resumed = data.begin(loaded);
  std::optional<Batch> next = resumed.next();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->sequence(), 9u);  // numbering goes on
}

// ---- elastic: N shards -> M shards ----

// Every element of every epoch a sharded run delivered, with the checksum of its own pixels.
using Census = std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t>;

void count_into(Census& census, const Batch& batch, int& duplicates) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    BatchChecksum sum;
    sum.add(std::span<const std::uint8_t>(batch.image(i).data, batch.image(i).shape().bytes()));
    const auto key = std::make_pair(batch.samples()[i].epoch, batch.samples()[i].index);
    if (!census.emplace(key, sum.value()).second) ++duplicates;
  }
}

Dataset sharded(std::size_t num_shards, std::size_t index) {
  return numbered_memory(97).shuffle().repeat(2).shard(num_shards, index);
}

TEST(ElasticResume, TheRestOfTheEpochComesExactlyOnceAcrossTheNewShardsWithTheSamePixels) {
  Census reference;
  int duplicates = 0;
  for (const Batch& batch : numbered(sharded(1, 0), 2)) count_into(reference, batch, duplicates);
  ASSERT_EQ(duplicates, 0);

  // Takes `count` batches (all when -1) into the census.
  Census census;
  auto run = [&](BatchIterator it, long count) {
    for (long b = 0; count < 0 || b < count; ++b) {
      std::optional<Batch> batch = it.next();
      if (!batch) {
        EXPECT_LT(count, 0) << "the shard ended early";
        break;
      }
      count_into(census, *batch, duplicates);
    }
    return it.state();
  };
  // Three shards, stopped at different points (a shard is rarely exactly in step with the others).
  std::vector<IteratorState> states;
  const long stops[] = {3, 5, 4};
  for (std::size_t shard = 0; shard < 3; ++shard)
    states.push_back(
        IteratorState::from_json(run(numbered(sharded(3, shard), 2).begin(), stops[shard]).to_json()));
  // Two shards go on from the combined state into the second epoch and stop again; then four finish the run.
  const IteratorState two = IteratorState::combine(states);
  std::vector<IteratorState> second;
  for (std::size_t shard = 0; shard < 2; ++shard)
    second.push_back(run(numbered(sharded(2, shard), 3).begin(two), 6 + static_cast<long>(shard)));
  const IteratorState four = IteratorState::combine(second);
  for (std::size_t shard = 0; shard < 4; ++shard) run(numbered(sharded(4, shard), 1).begin(four), -1);
  EXPECT_EQ(duplicates, 0);
  EXPECT_EQ(census, reference);  // every element once, each with its own pixels
}

TEST(ElasticResume, ASameCountRestoreFromCombinedStatesGivesEachShardItsOwnRest) {
  std::vector<IteratorState> states;
  std::vector<std::vector<Delivered>> rests;
  for (std::size_t shard = 0; shard < 2; ++shard) {
    BatchIterator it = numbered(sharded(2, shard), 2).begin();
    take(it, 2 + static_cast<long>(shard));
    states.push_back(it.state());
    rests.push_back(take(it));
  }
  const IteratorState combined = IteratorState::combine(states);
  for (std::size_t shard = 0; shard < 2; ++shard) {
    BatchIterator it = numbered(sharded(2, shard), 2).begin(combined);
    std::vector<Delivered> rest = take(it);
    for (Delivered& d : rest) d.sequence = 0;  // a combined state restarts the numbering
    for (Delivered& d : rests[shard]) d.sequence = 0;
    EXPECT_EQ(rest, rests[shard]) << "shard " << shard;
  }
}

// ---- what is refused, and how ----

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(IteratorState, AStateOfAnotherDatasetIsRefusedNamingTheDifference) {
  BatchIterator it = numbered(numbered_memory(40).shuffle().repeat(2), 2).begin();
  take(it, 2);
  const IteratorState state = it.state();
  EXPECT_NE(
      error_of([&] { numbered(numbered_memory(41).shuffle().repeat(2), 2).begin(state); }).find("source 41"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              numbered(numbered_memory(40).shuffle(8).repeat(2), 2).begin(state);
            }).find("shuffle buffer 8"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { numbered(numbered_memory(40).shuffle().repeat(2), 2, 99).begin(state); }).find("seed"),
      std::string::npos);
}

TEST(IteratorState, AShardsStateAloneDoesNotStartAnotherShard) {
  BatchIterator it = numbered(sharded(3, 1), 2).begin();
  take(it, 1);
  const std::string message = error_of([&] { numbered(sharded(2, 1), 2).begin(it.state()); });
  EXPECT_NE(message.find("IteratorState::combine"), std::string::npos) << message;
  const IteratorState one = it.state();
  EXPECT_NE(error_of([&] { IteratorState::combine(std::span(&one, 1)); }).find("1 states for 3 shards"),
            std::string::npos);
  const std::vector<IteratorState> twice = {one, one, one};
  EXPECT_NE(error_of([&] { IteratorState::combine(twice); }).find("two states of shard 1"),
            std::string::npos);
}

TEST(IteratorState, ElasticRestoreNeedsAChainWhoseOrderDoesNotDependOnTheShardCount) {
  auto per_shard_take = [](std::size_t n, std::size_t i) {
    return numbered_memory(50).shuffle().shard(n, i).take(9);
  };
  std::vector<IteratorState> states;
  for (std::size_t shard = 0; shard < 2; ++shard) {
    BatchIterator it = numbered(per_shard_take(2, shard), 1).begin();
    take(it, 1);
    states.push_back(it.state());
  }
  const std::string message =
      error_of([&] { numbered(per_shard_take(3, 0), 1).begin(IteratorState::combine(states)); });
  EXPECT_NE(message.find("take() after shard()"), std::string::npos) << message;
}

TEST(IteratorState, DamagedStateTextIsRefusedSayingWhy) {
  BatchIterator it = numbered(numbered_memory(40).shuffle().repeat(2), 2).begin();
  take(it, 3);
  const std::string text = it.state().to_json();
  EXPECT_NE(error_of([&] {
              IteratorState::from_json(text.substr(0, text.size() / 2), "run/state.json");
            }).find("run/state.json: not an iterator state (truncated"),
            std::string::npos);
  std::string changed = text;
  const std::size_t at = changed.find("\"batches\": 3");
  ASSERT_NE(at, std::string::npos);
  changed.replace(at, 12, "\"batches\": 4");
  EXPECT_NE(error_of([&] { IteratorState::from_json(changed); }).find("checksum mismatch"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              IteratorState::from_json("{\"format\": \"something else\"}");
            }).find("not an iterator state"),
            std::string::npos);
  const testing::TempDir dir;
  EXPECT_THROW(IteratorState::load(dir / "missing.json"), IoError);
}

TEST(IteratorState, OutOfOrderDeliveryHasNoState) {
  BatchIterator it = numbered_memory(20)
                         .map(fill_from_seed(kShape))
                         .with_options({.threads = 3, .deterministic = false})
                         .batch(4)
                         .begin();
  EXPECT_THROW(it.state(), InvalidArgument);
}

// ---- settings that agree ----

TEST(Options, WithOptionsSetsOnlyTheFieldsItIsGiven) {
  const Dataset data =
      numbered_memory(4).with_options({.threads = 2, .held_batches = 3}).with_options({.seed = 7});
  EXPECT_EQ(data.options().threads, 2);
  EXPECT_EQ(data.options().held_batches, 3u);
  EXPECT_EQ(data.options().seed, 7u);
  const BatchedDataset batched = data.batch(2).with_options({.deterministic = false});
  EXPECT_EQ(batched.options().threads, 2);
  EXPECT_FALSE(batched.options().deterministic);
  PipelineOptions whole;
  whole.max_in_flight = 5;
  EXPECT_EQ(data.with_options(PipelineOptionChanges::all(whole)).options().threads, 0);  // all: every field
  EXPECT_THROW(data.with_options({.threads = -1}), InvalidArgument);
}

std::vector<std::uint64_t> order_of(const Dataset& data) {
  std::vector<std::uint64_t> numbers;
  for (const Sample& s : data) numbers.push_back(testing::number_of(s));
  return numbers;
}

TEST(Shuffle, WithoutASeedItFollowsThePipelineSeed) {
  const Dataset buffered = numbered_memory(50).shuffle(16);
  EXPECT_EQ(order_of(buffered.with_options({.seed = 1})), order_of(buffered.with_options({.seed = 1})));
  EXPECT_NE(order_of(buffered.with_options({.seed = 1})), order_of(buffered.with_options({.seed = 2})));
  const Dataset seeded = numbered_memory(50).shuffle(16, 5);
  EXPECT_EQ(order_of(seeded.with_options({.seed = 1})), order_of(seeded.with_options({.seed = 2})));
  const Dataset whole = numbered_memory(50).shuffle();
  EXPECT_NE(order_of(whole.with_options({.seed = 1})), order_of(whole.with_options({.seed = 2})));
  // The derived seed includes the shuffle's position in the chain: the same shuffle one step later draws
  // another order.
  EXPECT_NE(order_of(numbered_memory(50).shuffle(16).with_options({.seed = 3})),
            order_of(numbered_memory(50).take(50).shuffle(16).with_options({.seed = 3})));
}

TEST(Shuffle, TheWholeEpochShuffleIsANewPermutationEveryEpoch) {
  const std::vector<std::uint64_t> order =
      order_of(numbered_memory(300).shuffle().repeat(2).with_options({.seed = 4}));
  ASSERT_EQ(order.size(), 600u);
  const std::vector<std::uint64_t> first(order.begin(), order.begin() + 300),
      second(order.begin() + 300, order.end());
  for (const auto* epoch : {&first, &second}) {
    std::vector<std::uint64_t> sorted = *epoch;
    std::sort(sorted.begin(), sorted.end());
    for (std::uint64_t i = 0; i < 300; ++i) ASSERT_EQ(sorted[i], i);
  }
  EXPECT_NE(first, second);
  int in_place = 0;
  for (std::uint64_t i = 0; i < 300; ++i) in_place += first[i] == i;
  EXPECT_LT(in_place, 10);  // a random permutation fixes about one element
}

TEST(Shuffle, TheWholeEpochShuffleNeedsRandomAccessBeforeIt) {
  EXPECT_THROW(numbered_memory(10).shuffle(4).shuffle(), InvalidArgument);
  EXPECT_THROW(numbered_memory(10).repeat().shuffle(), InvalidArgument);
  EXPECT_THROW(numbered_memory(10).shard(2, 0).shard(2, 1).shuffle(), InvalidArgument);
  EXPECT_NO_THROW(numbered_memory(10).repeat(3).skip(2).take(20).shuffle());
  EXPECT_NO_THROW(numbered_memory(10).skip(1).shard(3, 1).shuffle());
}

}  // namespace
}  // namespace conveyor
