// Dataset::tar_shards through the whole pipeline: every sample once per epoch, shard order per epoch,
// identity (index, seed, pixels) independent of thread count and world size, equal batches per rank, and
// broken shards as errors or counted skips.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "conveyor/random.h"
#include "fixtures.h"
#include "support/tar_files.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using testing::number_of;
using testing::TarMember;
using testing::TempDir;
using testing::text_member;

struct Seen {
  std::uint64_t number, epoch, index, seed;
  std::int64_t label;
  bool padding;
};

std::vector<Seen> run(const Dataset& dataset, PipelineOptionChanges options = {.threads = 3, .seed = 4}) {
  std::vector<Seen> seen;
  for (const Sample& s : dataset.with_options(options))
    seen.push_back({number_of(s), s.epoch, s.index, s.seed, s.label, s.padding});
  return seen;
}

TarShardOptions unshuffled() {
  TarShardOptions options;
  options.shuffle_shards = false;
  return options;
}

// Unshuffled and one shard at a time: the stream is the epoch's order (several shards interleave).
TarShardOptions in_stored_order() {
  TarShardOptions options = unshuffled();
  options.parallel_shards = 1;
  return options;
}

TEST(TarShards, EverySampleComesOncePerEpochWithItsLabelAndName) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {5, 0, 7, 3});
  const std::vector<Seen> seen = run(Dataset::tar_shards(shards).repeat(2));
  ASSERT_EQ(seen.size(), 30u);
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::set<std::uint64_t> numbers, indices;
    for (const Seen& s : seen) {
      if (s.epoch != epoch) continue;
      numbers.insert(s.number);
      indices.insert(s.index);
      EXPECT_EQ(s.label, static_cast<std::int64_t>(s.number % 10));
      EXPECT_EQ(s.seed, sample_seed(4, s.epoch, s.index));
      EXPECT_FALSE(s.padding);
    }
    EXPECT_EQ(numbers.size(), 15u);
    EXPECT_EQ(*numbers.rbegin(), 14u);
    EXPECT_EQ(indices.size(), 15u);
    EXPECT_EQ(*indices.rbegin(), 14u);
  }
  std::vector<std::string> paths;
  for (const Sample& s : Dataset::tar_shards({shards[3]}).with_options({.threads = 2}))
    paths.push_back(s.path);
  EXPECT_EQ(paths, (std::vector<std::string>{shards[3] + "#shard3/12.jpg", shards[3] + "#shard3/13.jpg",
                                             shards[3] + "#shard3/14.jpg"}));
}

TEST(TarShards, ShardsComeInANewOrderEveryEpochUnlessAskedNotTo) {
  TempDir dir;
  const std::vector<std::string> shards =
      testing::write_numbered_shards(dir.path(), {2, 2, 2, 2, 2, 2, 2, 2});
  std::vector<std::vector<std::uint64_t>> epochs(3);
  TarShardOptions one_at_a_time;
  one_at_a_time.parallel_shards = 1;  // so that each shard's two samples come one after the other
  for (const Seen& s : run(Dataset::tar_shards(shards, one_at_a_time).repeat(3)))
    epochs[s.epoch].push_back(s.number);
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  for (const std::vector<std::uint64_t>& epoch : epochs)
    for (std::size_t i = 0; i < epoch.size(); i += 2)
      EXPECT_EQ(epoch[i] + 1, epoch[i + 1]) << "a shard's order";
  const std::vector<Seen> plain = run(Dataset::tar_shards(shards, in_stored_order()));
  for (std::uint64_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(plain[i].number, i);
    EXPECT_EQ(plain[i].index, i);
  }
}

TEST(TarShards, BatchesAreTheSameAtAnyThreadCountAndReadAhead) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {9, 4, 11, 6});
  // The interleaving depends on parallel_shards (as tf.data's on cycle_length), nothing else does.
  for (const std::size_t parallel : {1u, 3u}) {
    std::set<std::uint64_t> checksums;
    for (const int threads : {1, 2, 5}) {
      for (const std::size_t queued : {1u, 4u}) {
        TarShardOptions options;
        options.seed = 17;
        options.parallel_shards = parallel;
        options.queued_samples = queued;
        checksums.insert(testing::checksum_of(Dataset::tar_shards(shards, options)
                                                  .shuffle(8, 3)
                                                  .repeat(2)
                                                  .map(testing::fill_from_seed({4, 4, 3}))
                                                  .with_options({.threads = threads, .seed = 9})
                                                  .batch(5)));
      }
    }
    EXPECT_EQ(checksums.size(), 1u) << parallel << " shards at once";
  }
}

TEST(TarShards, ShardsReadAtOnceGiveOneSampleEachInTurnAndKeepTheirIndices) {
  TempDir dir;
  // Samples 0-2 | 3 | 4-7 | 8-9; unshuffled, so each sample's index is its number.
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {3, 1, 4, 2});
  for (const std::size_t queued : {1u, 8u}) {
    TarShardOptions options = unshuffled();
    options.parallel_shards = 2;
    options.queued_samples = queued;
    std::vector<std::uint64_t> numbers;
    for (const Seen& s : run(Dataset::tar_shards(shards, options))) {
      numbers.push_back(s.number);
      EXPECT_EQ(s.index, s.number);
      EXPECT_EQ(s.seed, sample_seed(4, 0, s.index));
    }
    // Shards 0 and 1 in turn; 1 ends, 2 takes its place; 0 ends, 3 takes its place; 3 ends, 2 goes on.
    EXPECT_EQ(numbers, (std::vector<std::uint64_t>{0, 3, 1, 4, 2, 5, 8, 6, 9, 7})) << "queued " << queued;
  }
}

TEST(TarShards, APipelineOutOfOrderTakesSamplesAsReadyAndStillGivesEachOnceWithItsIdentity) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {9, 2, 0, 14, 6, 11});
  for (const std::size_t queued : {1u, 4u}) {
    TarShardOptions options = unshuffled();
    options.parallel_shards = 3;
    options.queued_samples = queued;
    const std::vector<Seen> seen = run(Dataset::tar_shards(shards, options).repeat(2),
                                       {.threads = 4, .deterministic = false, .seed = 4});
    ASSERT_EQ(seen.size(), 84u) << "queued " << queued;
    std::set<std::pair<std::uint64_t, std::uint64_t>> once;  // (epoch, number)
    for (const Seen& s : seen) {
      EXPECT_TRUE(once.insert({s.epoch, s.number}).second) << "sample " << s.number << " twice";
      EXPECT_EQ(s.index, s.number);  // unshuffled: the index is the sample's number, whatever the order
      EXPECT_EQ(s.seed, sample_seed(4, s.epoch, s.index));
    }
  }
}

TEST(TarShards, AShuffleBufferReordersARanksShareButKeepsEachSamplesIndexAndSeed) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {6, 6, 6});
  const std::vector<Seen> plain = run(Dataset::tar_shards(shards));
  const std::vector<Seen> shuffled = run(Dataset::tar_shards(shards).shuffle(10, 5));
  ASSERT_EQ(plain.size(), shuffled.size());
  std::vector<std::uint64_t> plain_order, shuffled_order;
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> identity;  // number -> (index, seed)
  for (const Seen& s : plain) {
    plain_order.push_back(s.number);
    identity[s.number] = {s.index, s.seed};
  }
  for (const Seen& s : shuffled) {
    shuffled_order.push_back(s.number);
    EXPECT_EQ(identity.at(s.number), std::make_pair(s.index, s.seed));
  }
  EXPECT_NE(plain_order, shuffled_order);
}

TEST(TarShards, RanksGetEqualSharesAndEverySampleKeepsItsIdentityAtAnyWorldSize) {
  TempDir dir;
  const std::vector<int> sizes{7, 3, 0, 12, 5, 1, 9};  // 37 samples
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), sizes);
  TarShardOptions options;
  options.seed = 21;
  // number -> (index, seed) with one rank
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> identity;
  for (const Seen& s : run(Dataset::tar_shards(shards, options))) identity[s.number] = {s.index, s.seed};
  ASSERT_EQ(identity.size(), 37u);
  for (const ShardRemainder remainder : {ShardRemainder::pad, ShardRemainder::drop}) {
    for (int world = 1; world <= 8; ++world) {
      std::multiset<std::uint64_t> real;
      std::set<std::size_t> batch_counts, sample_counts;
      for (int rank = 0; rank < world; ++rank) {
        options.ranks.rank = rank;
        options.ranks.world_size = world;
        options.remainder = remainder;
        const Dataset share = Dataset::tar_shards(shards, options).shuffle(4, 2);
        const std::vector<Seen> seen = run(share);
        sample_counts.insert(seen.size());
        for (const Seen& s : seen) {
          EXPECT_EQ(identity.at(s.number), std::make_pair(s.index, s.seed)) << "world " << world;
          if (!s.padding) real.insert(s.number);
        }
        std::size_t batches = 0;
        for (const Batch& batch :
             share.map(testing::fill_from_seed({2, 2, 1})).with_options({.threads = 2}).batch(3)) {
          ++batches;
          (void)batch;
        }
        batch_counts.insert(batches);
      }
      const std::string what = std::string(to_string(remainder)) + " world " + std::to_string(world);
      EXPECT_EQ(batch_counts.size(), 1u) << what;
      EXPECT_EQ(sample_counts.size(), 1u) << what;
      EXPECT_EQ(*sample_counts.begin(),
                remainder == ShardRemainder::pad ? (37u + world - 1) / world : 37u / world)
          << what;
      EXPECT_EQ(real.size(), remainder == ShardRemainder::pad ? 37u : 37u / world * world) << what;
      EXPECT_EQ(std::set<std::uint64_t>(real.begin(), real.end()).size(), real.size()) << what << ": twice";
    }
  }
}

TEST(TarShards, AnIndexGivesTheCountsAndNamesShardsRelativeToItself) {
  TempDir dir;
  const std::vector<int> sizes{4, 6};
  testing::write_numbered_shards(dir.path(), sizes);
  testing::write_file(dir / "index.json", [&] {
    const std::string json = testing::shard_index_json({"shard-000000.tar", "shard-000001.tar"}, sizes);
    return std::vector<std::uint8_t>(json.begin(), json.end());
  }());
  TarShardOptions options = in_stored_order();
  const Dataset indexed = Dataset::tar_shard_index((dir / "index.json").string(), options);
  EXPECT_EQ(indexed.source_size(), 10u);
  EXPECT_THROW(indexed.source_path(0), InvalidArgument);
  const std::vector<Seen> seen = run(indexed);
  ASSERT_EQ(seen.size(), 10u);
  for (std::uint64_t i = 0; i < 10; ++i) EXPECT_EQ(seen[i].number, i);
  options.ranks.world_size = 2;
  options.ranks.rank = 1;
  const std::vector<Seen> second = run(Dataset::tar_shard_index((dir / "index.json").string(), options));
  ASSERT_EQ(second.size(), 5u);
  EXPECT_EQ(second[0].number, 5u);  // rank 1 starts in the middle of shard 1
}

TEST(TarShards, SplittingUrlsWithoutAnIndexIsRefused) {
  TarShardOptions options;
  options.ranks.world_size = 2;
  try {
    Dataset::tar_shards({"http://127.0.0.1:1/a.tar"}, options);
    FAIL() << "no counts";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("needs each shard's sample count"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(Dataset::tar_shards({}), InvalidArgument);
  options.ranks.world_size = 1;
  options.parallel_shards = 0;
  EXPECT_THROW(Dataset::tar_shards({"a.tar"}, options), InvalidArgument);
}

std::vector<std::uint8_t> bytes_of(std::uint64_t number) {
  std::vector<std::uint8_t> bytes(sizeof number);
  std::memcpy(bytes.data(), &number, sizeof number);
  return bytes;
}

// The format's rules hold alike for a shard streamed and for one read at random.
class TarShardsEitherWay : public ::testing::TestWithParam<bool> {
 protected:
  TarShardOptions options() const {
    TarShardOptions options;
    options.random_access = GetParam();
    options.require_label = true;  // a classification set: a sample without its label is broken
    return options;
  }
};

INSTANTIATE_TEST_SUITE_P(Access, TarShardsEitherWay, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "random" : "streamed"; });

TEST_P(TarShardsEitherWay, ABrokenSampleFailsAtItsPlaceNamingShardMemberAndOffset) {
  TempDir dir;
  testing::write_tar(dir / "s.tar", {{"a.jpg", bytes_of(0)},
                                     text_member("a.cls", "0"),
                                     {"b.jpg", bytes_of(1)},
                                     {"c.jpg", bytes_of(2)},
                                     text_member("c.cls", "2")});
  BatchIterator it = Dataset::tar_shards({(dir / "s.tar").string()}, options())
                         .map(testing::fill_from_seed({2, 2, 1}))
                         .with_options({.threads = 2})
                         .batch(1)
                         .begin();
  ASSERT_TRUE(it.next().has_value());
  try {
    it.next();
    FAIL() << "b has no label";
  } catch (const PipelineError& error) {
    EXPECT_EQ(error.stage(), "read");
    EXPECT_EQ(error.path(), (dir / "s.tar").string() + "#b.jpg");
    EXPECT_NE(
        error.reason().find("s.tar': member 'b.jpg' at byte 2048: sample 'b' has no '.cls' label member"),
        std::string::npos)
        << error.reason();
  }
}

TEST_P(TarShardsEitherWay, UnderSkipBrokenSamplesAreCountedByKind) {
  TempDir dir;
  testing::write_tar(dir / "s.tar", {{"a.jpg", bytes_of(0)},
                                     text_member("a.cls", "0"),
                                     {"b.jpg", bytes_of(1)},
                                     text_member("c.txt", "no image"),
                                     {"d.jpg", bytes_of(3)},
                                     text_member("d.cls", "three"),
                                     {"a.jpg", bytes_of(4)},
                                     text_member("a.cls", "4"),
                                     {"e.jpg", bytes_of(5)},
                                     text_member("e.cls", "5")});
  SampleIterator it = Dataset::tar_shards({(dir / "s.tar").string()}, options())
                          .with_options({.threads = 2, .on_error = OnError::skip})
                          .begin();
  std::vector<std::uint64_t> numbers;
  while (std::optional<Sample> sample = it.next()) numbers.push_back(number_of(*sample));
  EXPECT_EQ(numbers, (std::vector<std::uint64_t>{0, 5}));
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.skipped, 4u);
  EXPECT_EQ(stats.skip_reasons.at("read: no_label"), 1u);
  EXPECT_EQ(stats.skip_reasons.at("read: no_image"), 1u);
  EXPECT_EQ(stats.skip_reasons.at("read: bad_label"), 1u);
  EXPECT_EQ(stats.skip_reasons.at("read: duplicate_key"), 1u);
}

TEST(TarShards, ATruncatedShardLosesItsRestAsCountedSkipsAndRanksStayEven) {
  TempDir dir;
  const std::vector<int> sizes{6, 6};
  std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), sizes);
  // Cut shard 0 inside its fourth sample's image (each sample: 512 + 512 image, 512 + 512 label).
  std::filesystem::resize_file(shards[0], 3 * 2048 + 700);
  const std::string json = testing::shard_index_json({"shard-000000.tar", "shard-000001.tar"}, sizes);
  testing::write_file(dir / "index.json", std::vector<std::uint8_t>(json.begin(), json.end()));
  TarShardOptions options = unshuffled();
  options.ranks.world_size = 2;
  std::set<std::size_t> batch_counts;
  std::map<std::string, std::uint64_t> reasons;
  for (int rank = 0; rank < 2; ++rank) {
    options.ranks.rank = rank;
    BatchIterator it = Dataset::tar_shard_index((dir / "index.json").string(), options)
                           .map(testing::fill_from_seed({2, 2, 1}))
                           .with_options({.threads = 2, .on_error = OnError::skip})
                           .batch(4)
                           .begin();
    std::size_t batches = 0, padding = 0;
    while (std::optional<Batch> batch = it.next()) {
      ++batches;
      for (const SampleInfo& sample : batch->samples()) padding += sample.padding;
    }
    batch_counts.insert(batches);
    for (const auto& [reason, count] : it.stats().skip_reasons) reasons[reason] += count;
    if (rank == 0) {
      EXPECT_EQ(padding, 3u) << "the three lost samples are padding in rank 0's batches";
    }
  }
  EXPECT_EQ(batch_counts, (std::set<std::size_t>{2}));
  EXPECT_EQ(reasons["read: truncated"], 1u);
  EXPECT_EQ(reasons["read: shard_failed"], 2u);
}

TEST(TarShards, AShardThatDisagreesWithItsIndexIsAnError) {
  TempDir dir;
  testing::write_numbered_shards(dir.path(), {3, 3});
  const std::string json = testing::shard_index_json({"shard-000000.tar", "shard-000001.tar"}, {5, 2});
  testing::write_file(dir / "index.json", std::vector<std::uint8_t>(json.begin(), json.end()));
  SampleIterator it = Dataset::tar_shard_index((dir / "index.json").string(), in_stored_order())
                          .with_options({.threads = 2, .on_error = OnError::skip})
                          .begin();
  std::vector<std::uint64_t> numbers;
  while (std::optional<Sample> sample = it.next()) numbers.push_back(number_of(*sample));
  // shard 0 owes two samples; shard 1's second sample is flagged: the shard has a third.
  EXPECT_EQ(numbers, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.skip_reasons.at("read: index_mismatch"), 3u);
  ASSERT_FALSE(stats.skipped_samples.empty());
  EXPECT_NE(stats.skipped_samples[0].reason.find("has 3 samples, fewer than its count (5)"),
            std::string::npos)
      << stats.skipped_samples[0].reason;
  EXPECT_NE(stats.skipped_samples[2].reason.find("has more samples than its count (2)"), std::string::npos)
      << stats.skipped_samples[2].reason;
}

TEST(TarShards, AMissingShardFailsOrIsSkippedSampleBySample) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {2, 2});
  std::filesystem::remove(shards[1]);
  const std::string json = testing::shard_index_json({"shard-000000.tar", "shard-000001.tar"}, {2, 2});
  testing::write_file(dir / "index.json", std::vector<std::uint8_t>(json.begin(), json.end()));
  SampleIterator skipping = Dataset::tar_shard_index((dir / "index.json").string(), unshuffled())
                                .with_options({.threads = 2, .on_error = OnError::skip})
                                .begin();
  std::size_t delivered = 0;
  while (skipping.next()) ++delivered;
  EXPECT_EQ(delivered, 2u);
  EXPECT_EQ(skipping.stats().skip_reasons.at("read: io"), 1u);
  EXPECT_EQ(skipping.stats().skip_reasons.at("read: shard_failed"), 1u);
  try {
    for (const Sample& s : Dataset::tar_shards(shards, unshuffled()).with_options({.threads = 2})) (void)s;
    FAIL() << "the second shard is missing";
  } catch (const PipelineError& error) {
    EXPECT_NE(error.reason().find("cannot open '" + shards[1] + "'"), std::string::npos) << error.reason();
  }
}

TEST_P(TarShardsEitherWay, ImageMembersOverTheFileLimitAreRefused) {
  TempDir dir;
  testing::write_tar(dir / "s.tar",
                     {{"big.jpg", std::vector<std::uint8_t>(10'000, 1)}, text_member("big.cls", "1")});
  SampleIterator it = Dataset::tar_shards({(dir / "s.tar").string()}, options())
                          .with_options({.threads = 2, .on_error = OnError::skip, .max_file_bytes = 4096})
                          .begin();
  EXPECT_FALSE(it.next().has_value());
  EXPECT_EQ(it.stats().skip_reasons.at("read: too_large"), 1u);
}

TEST(TarShards, DroppingTheIteratorStopsReadersThatWaitForRoom) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {50, 50, 50, 50});
  TarShardOptions options;
  options.parallel_shards = 3;
  options.queued_samples = 1;  // every reader soon waits for the consumer
  testing::Watchdog watchdog(std::chrono::seconds(30), "dropping a tar_shards iterator");
  for (int round = 0; round < 20; ++round) {
    SampleIterator it = Dataset::tar_shards(shards, options).repeat().with_options({.threads = 2}).begin();
    for (int i = 0; i < round; ++i) ASSERT_TRUE(it.next().has_value());
  }
}

TEST(TarShards, ASingleUnshuffledShardGivesTheImageFoldersBatches) {
  TempDir dir;
  const std::filesystem::path root = testing::make_jpeg_folder(dir, 3, 4, 40, 48);
  const Dataset folder = Dataset::image_folder(root);
  std::vector<TarMember> members;
  for (std::size_t i = 0; i < folder.source_size(); ++i) {
    const std::string path = folder.source_path(i);
    const std::string key = std::filesystem::relative(path, root).replace_extension().string();
    members.push_back({key + ".jpg", [&] {
                         std::ifstream in(path, std::ios::binary);
                         return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
                       }()});
    members.push_back(text_member(key + ".cls", std::to_string(folder.source_label(i))));
  }
  testing::write_tar(dir / "all.tar", members);
  const auto batches = [](const Dataset& d) {
    return testing::checksum_of(d.map(ops::decode_random_resized_crop(16))
                                    .map(ops::flip_horizontal(0.5))
                                    .with_options({.threads = 3, .seed = 8})
                                    .batch(5, ImageShape{16, 16, 3}));
  };
  EXPECT_EQ(batches(Dataset::tar_shards({(dir / "all.tar").string()}, unshuffled())), batches(folder));
}

}  // namespace
}  // namespace conveyor
