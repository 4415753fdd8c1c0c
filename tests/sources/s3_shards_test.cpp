// Shards from an S3-compatible store on the loopback address (support/s3_server.h: a real server that
// checks Signature Version 4): a whole epoch from a listed prefix, an index and a pattern; the local shard
// cache cold, warm, over its cap, after a half-written entry, shared by two processes; a server killed
// mid-shard, then restarted or not; wrong credentials. Every test runs under a watchdog.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "fixtures.h"
#include "src/sources/s3_client.h"
#include "support/s3_server.h"
#include "support/scoped_environment.h"
#include "support/subprocess.h"
#include "support/tar_files.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

namespace fs = std::filesystem;
using testing::S3TestServer;
using testing::ScopedEnvironment;
using testing::TempDir;
using testing::Watchdog;

const std::vector<int> kSizes{7, 5, 9, 3, 6};  // 30 samples in 5 shards
constexpr std::uint64_t kSamples = 30;

// Numbered shards (support/tar_files.h) served under s3://bkt/train/, with their index beside them.
struct ShardStore {
  TempDir dir;
  std::vector<std::string> local;  // the same shards on local disk
  std::unique_ptr<S3TestServer> server;
  std::unique_ptr<ScopedEnvironment> environment;

  explicit ShardStore(const std::vector<int>& sizes = kSizes) {
    local = testing::write_numbered_shards(dir / "up", sizes);
    std::vector<std::string> names;
    for (const std::string& path : local) names.push_back(fs::path(path).filename().string());
    std::ofstream(dir / "up" / "index.json") << testing::shard_index_json(names, sizes);
    std::ofstream(dir / "up" / "README.txt") << "not a shard";
    server = std::make_unique<S3TestServer>(
        S3TestServer::Options{dir / "server", {"bkt"}, dir / "up", "bkt/train/", "127.0.0.1"});
    environment = std::make_unique<ScopedEnvironment>(testing::s3_environment(*server));
  }
  fs::path cache() const { return dir / "cache"; }
};

TarShardOptions in_order() {
  TarShardOptions options;
  options.shuffle_shards = false;
  options.http.retries = 3;
  options.http.retry_delay = std::chrono::milliseconds(20);
  return options;
}

TarShardOptions cached(const ShardStore& store, std::uint64_t max_bytes = std::uint64_t{1} << 30) {
  TarShardOptions options = in_order();
  options.cache.folder = store.cache();
  options.cache.max_bytes = max_bytes;
  return options;
}

// The numbers of every sample of an epoch, sorted, and the iterator's remote counts.
std::vector<std::uint64_t> read_numbers(const Dataset& dataset, RemoteReadStats* remote = nullptr) {
  SampleIterator it = dataset.with_options({.threads = 2}).begin();
  std::vector<std::uint64_t> numbers;
  while (std::optional<Sample> sample = it.next()) numbers.push_back(testing::number_of(*sample));
  std::sort(numbers.begin(), numbers.end());
  if (remote != nullptr) {
    // A shard's fill is counted when its stream closes: through an index the last sample can come before
    // the reader has drained the archive's padding into the cache entry, so the counts may settle just
    // after it. They are read once they have stayed the same for 200 ms.
    const auto same = [](const RemoteReadStats& a, const RemoteReadStats& b) {
      return a.cache_hits == b.cache_hits && a.cache_misses == b.cache_misses && a.uncached == b.uncached &&
             a.bytes_fetched == b.bytes_fetched;
    };
    *remote = it.stats().remote;
    for (int quiet = 0, rounds = 0; quiet < 20 && rounds < 1000; ++rounds) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const RemoteReadStats now = it.stats().remote;
      quiet = same(now, *remote) ? quiet + 1 : 0;
      *remote = now;
    }
  }
  return numbers;
}

std::vector<std::uint64_t> all_numbers(std::uint64_t count) {
  std::vector<std::uint64_t> numbers(count);
  std::iota(numbers.begin(), numbers.end(), 0);
  return numbers;
}

std::vector<fs::path> entries(const fs::path& folder) {
  std::vector<fs::path> out;
  for (const fs::directory_entry& item : fs::directory_iterator(folder))
    if (item.path().extension() == ".shard") out.push_back(item.path());
  return out;
}

std::uint64_t bytes_of(const std::vector<std::string>& paths) {
  std::uint64_t total = 0;
  for (const std::string& path : paths) total += fs::file_size(path);
  return total;
}

TEST(S3Shards, AnEpochFromAListedPrefixHasEverySampleOnce) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 epoch from a prefix");
  ShardStore store;
  RemoteReadStats remote;
  EXPECT_EQ(read_numbers(Dataset::tar_shards({"s3://bkt/train/"}, in_order()), &remote),
            all_numbers(kSamples));
  EXPECT_EQ(remote.shards_opened, kSizes.size());  // README.txt and index.json are not shards
  EXPECT_EQ(remote.bytes_fetched, bytes_of(store.local));
  EXPECT_EQ(remote.cache_hits + remote.cache_misses, 0u);
}

TEST(S3Shards, AListingFollowsContinuationTokens) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 listing pages");
  ShardStore store;
  const detail::S3Client client({}, detail::AwsEnvironment::of_process());
  const std::vector<detail::ListedObject> objects = client.list("bkt", "train/", {}, nullptr, nullptr, 2);
  std::vector<std::string> keys;
  for (const detail::ListedObject& object : objects) keys.push_back(object.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"train/README.txt", "train/index.json", "train/shard-000000.tar",
                                            "train/shard-000001.tar", "train/shard-000002.tar",
                                            "train/shard-000003.tar", "train/shard-000004.tar"}));
  EXPECT_EQ(objects[2].size, fs::file_size(store.local[0]));
  EXPECT_EQ(objects[2].etag.front(), '"');
}

TEST(S3Shards, AnIndexSplitsRanksAndAPatternNamesShards) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 index and pattern");
  ShardStore store;
  std::vector<std::uint64_t> both;
  for (int rank = 0; rank < 2; ++rank) {
    TarShardOptions options = in_order();
    options.ranks = {rank, 2};
    const std::vector<std::uint64_t> numbers =
        read_numbers(Dataset::tar_shard_index("s3://bkt/train/index.json", options));
    EXPECT_EQ(numbers.size(), kSamples / 2);
    both.insert(both.end(), numbers.begin(), numbers.end());
  }
  std::sort(both.begin(), both.end());
  EXPECT_EQ(both, all_numbers(kSamples));
  EXPECT_EQ(read_numbers(Dataset::tar_shards(
                expand_shard_pattern("s3://bkt/train/shard-{000001..000002}.tar"), in_order())),
            (std::vector<std::uint64_t>{7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}));
}

TEST(S3ShardCache, ColdThenWarmAcrossEpochsAndRuns) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 cache cold and warm");
  ShardStore store;
  RemoteReadStats remote;
  // Two epochs of one data set: the first fetches and keeps every shard, the second reads them from disk.
  EXPECT_EQ(read_numbers(Dataset::tar_shards({"s3://bkt/train/"}, cached(store)).repeat(2), &remote).size(),
            2 * kSamples);
  EXPECT_EQ(remote.cache_misses, kSizes.size());
  EXPECT_EQ(remote.cache_hits, kSizes.size());
  EXPECT_EQ(remote.bytes_fetched, bytes_of(store.local));
  EXPECT_EQ(remote.bytes_from_cache, bytes_of(store.local));
  EXPECT_EQ(entries(store.cache()).size(), kSizes.size());
  // A later run (a new data set): every shard from the cache, nothing fetched.
  EXPECT_EQ(read_numbers(Dataset::tar_shards({"s3://bkt/train/"}, cached(store)), &remote),
            all_numbers(kSamples));
  EXPECT_EQ(remote.cache_hits, kSizes.size());
  EXPECT_EQ(remote.cache_misses, 0u);
  EXPECT_EQ(remote.bytes_fetched, 0u);
}

TEST(S3ShardCache, ThroughAnIndexTheObjectIsCheckedOnceAndAChangedOneFetchedAgain) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 cache check");
  ShardStore store;
  RemoteReadStats remote;
  read_numbers(Dataset::tar_shard_index("s3://bkt/train/index.json", cached(store)), &remote);
  EXPECT_EQ(remote.cache_misses, kSizes.size() + 1);  // the index is kept too
  // Shard 0 replaced on the server by other bytes (another ETag and size): its entry no longer applies.
  std::vector<std::string> replaced = testing::write_numbered_shards(store.dir / "new", {8});
  fs::create_directories(store.dir / "put");
  fs::rename(replaced[0], store.dir / "put" / "shard-000000.tar");
  store.environment.reset();
  store.server.reset();  // killed; started again on the same folder with shard 0 put anew
  store.server = std::make_unique<S3TestServer>(
      S3TestServer::Options{store.dir / "server", {"bkt"}, store.dir / "put", "bkt/train/", "127.0.0.1"});
  ScopedEnvironment pointed(testing::s3_environment(*store.server));
  TarShardOptions options = cached(store);
  const std::vector<std::uint64_t> numbers =
      read_numbers(Dataset::tar_shards({"s3://bkt/train/shard-000000.tar"}, options), &remote);
  EXPECT_EQ(numbers, all_numbers(8));  // the new shard's samples, not the cached old ones
  EXPECT_EQ(remote.cache_misses, 1u);
  EXPECT_EQ(remote.cache_hits, 0u);
}

TEST(S3ShardCache, OverItsCapTheLeastRecentlyUsedShardsGo) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 cache eviction");
  ShardStore store({6, 6, 6, 6, 6});  // shards of one size
  const std::uint64_t shard_bytes = fs::file_size(store.local[0]);
  const std::uint64_t cap = 2 * shard_bytes + shard_bytes / 2;
  RemoteReadStats remote;
  // A whole epoch, four shards read at once: whatever the order they complete in, two stay.
  EXPECT_EQ(read_numbers(Dataset::tar_shards({"s3://bkt/train/"}, cached(store, cap)), &remote),
            all_numbers(30));
  EXPECT_EQ(remote.cache_misses, 5u);
  EXPECT_EQ(remote.evictions, 3u);
  std::vector<fs::path> kept = entries(store.cache());
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_LE(fs::file_size(kept[0]) + fs::file_size(kept[1]), cap);
  // Least recently used first: shards 0 and 1 cached, 0 read again, then 2 pushes 1 out, not 0.
  fs::remove_all(store.cache());
  const auto read = [&](int shard) {
    read_numbers(Dataset::tar_shards({"s3://bkt/train/shard-00000" + std::to_string(shard) + ".tar"},
                                     cached(store, cap)),
                 &remote);
    return remote;
  };
  read(0);
  read(1);
  EXPECT_EQ(read(0).cache_hits, 1u);
  EXPECT_EQ(read(2).evictions, 1u);
  EXPECT_EQ(read(0).cache_hits, 1u);
  EXPECT_EQ(read(1).cache_misses, 1u);
}

TEST(S3ShardCache, AHalfWrittenOrDamagedEntryIsNeverRead) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 cache damage");
  ShardStore store;
  read_numbers(Dataset::tar_shards({"s3://bkt/train/"}, cached(store)));
  std::vector<fs::path> kept = entries(store.cache());
  ASSERT_EQ(kept.size(), kSizes.size());
  // What a killed filler leaves (a .part nobody holds) and an entry cut short.
  std::ofstream(kept[0].string() + ".part") << "half a shard";
  fs::resize_file(kept[1], fs::file_size(kept[1]) / 2);
  RemoteReadStats remote;
  EXPECT_EQ(read_numbers(Dataset::tar_shards({"s3://bkt/train/"}, cached(store)), &remote),
            all_numbers(kSamples));
  EXPECT_EQ(remote.cache_hits, kSizes.size() - 1);
  EXPECT_EQ(remote.cache_misses, 1u);
  EXPECT_FALSE(fs::exists(kept[0].string() + ".part"));  // cleared by the filler's eviction pass
}

TEST(S3ShardCache, TwoProcessesShareOneCache) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(180), "S3 cache shared by processes");
  ShardStore store;
  std::vector<std::string> environment;
  for (const auto& [name, value] : testing::s3_environment(*store.server))
    environment.push_back(name + "=" + value);
  const std::vector<std::string> argv{CONVEYOR_S3_CACHE_READER, "s3://bkt/train/", store.cache().string()};
  testing::ChildProcess first(argv, environment), second(argv, environment);
  const testing::ProcessResult a = first.wait(std::chrono::seconds(120)),
                               b = second.wait(std::chrono::seconds(120));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  // Each read every sample once (the sum of 0..29), whoever fetched what.
  EXPECT_NE(a.out.find("samples 30 sum 435 "), std::string::npos) << a.out;
  EXPECT_NE(b.out.find("samples 30 sum 435 "), std::string::npos) << b.out;
  EXPECT_EQ(entries(store.cache()).size(), kSizes.size());
  const testing::ProcessResult third = testing::run_process(argv, environment, std::chrono::seconds(120));
  EXPECT_NE(third.out.find("hits 5 misses 0 "), std::string::npos) << third.out;
}

// A shard large enough that the kill lands while it streams: 128 samples of 256 KB (32 MB) read one at a
// time, where the reader holds a sample and a chunk of 1 MB and the sockets a few MB.
struct BigShard {
  static TarShardOptions options() {
    TarShardOptions options = in_order();
    options.parallel_shards = 1;
    options.queued_samples = 1;
    return options;
  }
};

std::vector<testing::TarMember> big_members(int count) {
  std::vector<testing::TarMember> members;
  for (int i = 0; i < count; ++i) {
    std::vector<std::uint8_t> bytes(256 * 1024, static_cast<std::uint8_t>(i));
    std::memcpy(bytes.data(), &i, sizeof i);
    members.push_back({"s" + std::to_string(1000 + i) + ".jpg", std::move(bytes)});
  }
  return members;
}

TEST(S3Shards, AServerKilledMidShardAndRestartedIsResumedWithARange) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 server killed and restarted");
  TempDir dir;
  testing::write_tar(dir / "up" / "big.tar", big_members(128));
  S3TestServer server({dir / "server", {"bkt"}, dir / "up", "bkt/", "127.0.0.1"});
  ScopedEnvironment environment(testing::s3_environment(server));
  TarShardOptions options = BigShard::options();
  options.http.retries = 20;  // node starts again within a few of them
  options.http.retry_delay = std::chrono::milliseconds(100);
  SampleIterator it = Dataset::tar_shards({"s3://bkt/big.tar"}, options).with_options({.threads = 1}).begin();
  std::vector<int> seen;
  const auto take = [&] {
    std::optional<Sample> sample = it.next();
    if (!sample) return false;
    int i = 0;
    std::memcpy(&i, sample->encoded.data(), sizeof i);
    seen.push_back(i);
    EXPECT_EQ(sample->encoded.size(), 256u * 1024);
    EXPECT_EQ(sample->encoded.back(), static_cast<std::uint8_t>(i));
    return true;
  };
  ASSERT_TRUE(take());
  server.restart();  // killed (SIGKILL: its connection drops), then started again on the same port
  while (take()) {
  }
  std::vector<int> expected(128);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(seen, expected);
  EXPECT_GE(it.stats().remote.retries, 1u);
  const std::uint64_t size = 128 * (512 + 256 * 1024) + 1024;
  EXPECT_LT(it.stats().remote.bytes_fetched, size + size / 2) << "resumed, not fetched again from the start";
}

TEST(S3Shards, AServerKilledForGoodFailsNamingTheObjectAndTheByte) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 server killed");
  TempDir dir;
  testing::write_tar(dir / "up" / "big.tar", big_members(128));
  S3TestServer server({dir / "server", {"bkt"}, dir / "up", "bkt/", "127.0.0.1"});
  ScopedEnvironment environment(testing::s3_environment(server));
  SampleIterator it =
      Dataset::tar_shards({"s3://bkt/big.tar"}, BigShard::options()).with_options({.threads = 1}).begin();
  ASSERT_TRUE(it.next().has_value());
  server.kill();
  try {
    while (it.next()) {
    }
    FAIL() << "the shard cannot be read to its end";
  } catch (const PipelineError& error) {
    const std::string reason = error.reason();
    EXPECT_NE(reason.find("'s3://bkt/big.tar': "), std::string::npos) << reason;
    EXPECT_NE(reason.find(" at byte "), std::string::npos) << reason;
    EXPECT_NE(reason.find("(4 attempts)"), std::string::npos) << reason;
  }
}

TEST(S3Shards, AWrongAccessKeyOrSecretFailsWithTheStoresReason) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 wrong credentials");
  ShardStore store;
  const auto refused = [](const std::string& key, const std::string& secret, const S3TestServer& server) {
    ScopedEnvironment wrong(testing::s3_environment(server, key, secret));
    try {
      Dataset::tar_shards({"s3://bkt/train/"}, in_order());
    } catch (const IoError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  const std::string key = refused("NOBODY", "S3RVER", *store.server);
  EXPECT_NE(key.find("'s3://bkt/train/': HTTP 403 (InvalidAccessKeyId: "), std::string::npos) << key;
  EXPECT_EQ(key.find("attempt"), std::string::npos) << "not retried: " << key;
  const std::string secret = refused("S3RVER", "WRONG", *store.server);
  EXPECT_NE(secret.find("HTTP 403 (SignatureDoesNotMatch: "), std::string::npos) << secret;
  // The same for a shard read without a listing: its samples fail with the reason.
  ScopedEnvironment wrong(testing::s3_environment(*store.server, "NOBODY", "S3RVER"));
  SampleIterator it = Dataset::tar_shards({"s3://bkt/train/shard-000000.tar"}, in_order()).begin();
  try {
    it.next();
    FAIL() << "read with a wrong key";
  } catch (const PipelineError& error) {
    EXPECT_NE(error.reason().find("InvalidAccessKeyId"), std::string::npos) << error.reason();
  }
}

TEST(S3Shards, AMissingObjectIsNotFoundWithTheStoresReason) {
  CONVEYOR_REQUIRE_S3_SERVER();
  Watchdog watchdog(std::chrono::seconds(120), "S3 missing object");
  ShardStore store;
  TarShardOptions options = cached(store);
  try {
    SampleIterator it = Dataset::tar_shards({"s3://bkt/train/nope.tar"}, options).begin();
    it.next();
    FAIL() << "a missing object";
  } catch (const PipelineError& error) {
    EXPECT_NE(error.reason().find("'s3://bkt/train/nope.tar': HTTP 404 (NoSuchKey: "), std::string::npos)
        << error.reason();
  }
}

}  // namespace
}  // namespace conveyor
