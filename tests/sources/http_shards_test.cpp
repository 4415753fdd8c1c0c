// Shards over HTTP (libcurl) against a server on 127.0.0.1 that fails on demand: retries before the first
// byte, resumption after a dropped connection (Range, or a server without Range), truncated responses,
// stalls and refused connections; each ends in the data or in an error naming the URL and the byte offset.
// Nothing may hang: every test runs under a watchdog.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "fixtures.h"
#include "src/sources/byte_stream.h"
#include "src/sources/cancellation.h"
#include "src/sources/shard_read_error.h"
#include "support/http_server.h"
#include "support/tar_files.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using testing::HttpTestServer;
using testing::TempDir;
using testing::Watchdog;
using Bytes = std::vector<std::uint8_t>;

HttpOptions quick() {
  HttpOptions options;
  options.retries = 3;
  options.retry_delay = std::chrono::milliseconds(5);
  options.connect_timeout = std::chrono::milliseconds(2000);
  options.low_speed_time = std::chrono::seconds(1);
  return options;
}

Bytes pattern_bytes(std::size_t size) {
  Bytes bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>((i * 131) ^ (i >> 8));
  return bytes;
}

// All of a URL through an HttpStream.
Bytes fetch(const std::string& url, const HttpOptions& options = quick()) {
  std::unique_ptr<detail::ByteStream> stream = detail::open_http_stream(url, options, nullptr);
  Bytes out;
  for (std::span<const std::uint8_t> chunk = stream->read(); !chunk.empty(); chunk = stream->read())
    out.insert(out.end(), chunk.begin(), chunk.end());
  EXPECT_EQ(stream->position(), out.size());
  return out;
}

// The error fetching a URL throws.
detail::ShardReadError fetch_error(const std::string& url, const HttpOptions& options = quick()) {
  try {
    fetch(url, options);
  } catch (const detail::ShardReadError& error) {
    return error;
  }
  ADD_FAILURE() << "fetching " << url << " did not fail";
  return detail::ShardReadError("none", "");
}

std::shared_ptr<const Bytes> shared(Bytes bytes) { return std::make_shared<const Bytes>(std::move(bytes)); }

TEST(HttpStream, ReadsAResourceWhole) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream whole");
  const Bytes data = pattern_bytes(3'000'000);
  HttpTestServer server(testing::serve_files({{"/data.bin", data}}));
  EXPECT_EQ(fetch(server.url("/data.bin")), data);
}

TEST(HttpStream, HoldsAtMostAboutOneMegabyteHoweverFastTheServer) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream bounded");
  const Bytes data = pattern_bytes(24'000'000);
  HttpTestServer server(testing::serve_files({{"/big.bin", data}}));
  std::unique_ptr<detail::ByteStream> stream =
      detail::open_http_stream(server.url("/big.bin"), quick(), nullptr);
  std::size_t largest = 0, total = 0;
  for (std::span<const std::uint8_t> chunk = stream->read(); !chunk.empty(); chunk = stream->read()) {
    EXPECT_EQ(std::memcmp(chunk.data(), data.data() + total, chunk.size()), 0);
    largest = std::max(largest, chunk.size());
    total += chunk.size();
  }
  EXPECT_EQ(total, data.size());
  // The stream pauses libcurl past 1 MB; one buffer of libcurl's (256 KB) may come on top.
  EXPECT_LE(largest, (std::size_t{1} << 20) + 256 * 1024);
}

Bytes text_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

TEST(HttpStream, AStoresSlowDownAndTooManyRequestsAreRetried) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream SlowDown");
  const auto data = shared(pattern_bytes(10'000));
  const auto slow_down = shared(text_bytes(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>"
      "<Message>Please reduce your request rate.</Message></Error>"));
  HttpTestServer server([&](const HttpTestServer::Request& request) {
    HttpTestServer::Reply reply;
    reply.status = request.attempt == 0 ? 503 : request.attempt == 1 ? 429 : 200;
    reply.body = request.attempt < 2 ? slow_down : data;
    return reply;
  });
  EXPECT_EQ(fetch(server.url("/x")), *data);
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(HttpStream, AStoresRefusalIsNotRetriedAndGivesItsCodeAndMessage) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream AccessDenied");
  const auto denied = shared(text_bytes(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>"
      "<Message>Access Denied</Message><RequestId>7</RequestId></Error>"));
  HttpTestServer server([&](const HttpTestServer::Request&) {
    HttpTestServer::Reply reply;
    reply.status = 403;
    reply.body = denied;
    return reply;
  });
  const detail::ShardReadError error = fetch_error(server.url("/private.tar"));
  EXPECT_EQ(error.kind(), "http_403");
  EXPECT_NE(std::string(error.what()).find("private.tar': HTTP 403 (AccessDenied: Access Denied) at byte 0"),
            std::string::npos)
      << error.what();
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(HttpStream, RetriesFailuresBeforeTheFirstByte) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream retries");
  const auto data = shared(pattern_bytes(10'000));
  HttpTestServer server([&](const HttpTestServer::Request& request) {
    HttpTestServer::Reply reply;
    if (request.attempt < 2) {
      reply.status = 503;
    } else {
      reply.body = data;
    }
    return reply;
  });
  EXPECT_EQ(fetch(server.url("/x")), *data);
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(HttpStream, ResumesADroppedConnectionWithARangeRequest) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream resume");
  const auto data = shared(pattern_bytes(500'000));
  HttpTestServer server([&](const HttpTestServer::Request& request) {
    HttpTestServer::Reply reply;
    reply.body = data;
    if (request.attempt == 0) {
      reply.cut_after = 123'456;
      reply.reset = true;  // the connection drops mid-shard
    }
    return reply;
  });
  EXPECT_EQ(fetch(server.url("/x")), *data);
  const std::vector<HttpTestServer::Request> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_FALSE(requests[0].range_start.has_value());
  EXPECT_EQ(requests[1].range_start, std::optional<std::uint64_t>(123'456));
}

TEST(HttpStream, ResumesFromAServerWithoutRangesByPassingOverWhatItHas) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream resume without ranges");
  const auto data = shared(pattern_bytes(400'000));
  HttpTestServer server([&](const HttpTestServer::Request& request) {
    HttpTestServer::Reply reply;
    reply.body = data;
    reply.ranges = false;
    if (request.attempt == 0) reply.cut_after = 200'000;
    return reply;
  });
  EXPECT_EQ(fetch(server.url("/x")), *data);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(HttpStream, ATruncatedResponseThatStaysTruncatedNamesUrlAndOffset) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream truncated");
  const auto data = shared(pattern_bytes(100'000));
  HttpTestServer server([&](const HttpTestServer::Request& request) {
    HttpTestServer::Reply reply;
    reply.body = data;
    // Content-Length says 100,000 bytes; every answer stops at byte 60,000 of the resource.
    reply.cut_after = 60'000 - static_cast<std::size_t>(request.range_start.value_or(0));
    return reply;
  });
  const detail::ShardReadError error = fetch_error(server.url("/shard.tar"));
  EXPECT_EQ(error.kind(), "truncated");
  const std::string message = error.what();
  const std::string quoted_url = std::string("'").append(server.url("/shard.tar")).append("'");
  EXPECT_NE(message.find(quoted_url), std::string::npos) << message;
  EXPECT_NE(message.find("at byte 60000 (4 attempts)"), std::string::npos) << message;
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST(HttpStream, NotFoundIsNotRetried) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream 404");
  HttpTestServer server(testing::serve_files({}));
  const detail::ShardReadError error = fetch_error(server.url("/missing.tar"));
  EXPECT_EQ(error.kind(), "http_404");
  EXPECT_NE(std::string(error.what()).find("missing.tar': HTTP 404 at byte 0"), std::string::npos)
      << error.what();
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(HttpStream, AStalledTransferTimesOut) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream stall");
  const auto data = shared(pattern_bytes(100'000));
  HttpTestServer server([&](const HttpTestServer::Request& request) {
    HttpTestServer::Reply reply;
    reply.body = data;
    reply.cut_after = request.range_start ? 0 : 1000;  // the resumed request stalls at once
    reply.stall = true;
    return reply;
  });
  HttpOptions options = quick();
  options.retries = 1;
  const detail::ShardReadError error = fetch_error(server.url("/slow.tar"), options);
  EXPECT_EQ(error.kind(), "timeout");
  EXPECT_NE(std::string(error.what()).find("at byte 1000 (2 attempts)"), std::string::npos) << error.what();
}

TEST(HttpStream, ARefusedConnectionFailsAfterTheRetries) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpStream refused");
  std::string url;
  {
    HttpTestServer gone(testing::serve_files({}));
    url = gone.url("/x.tar");
  }  // the port is closed now
  const detail::ShardReadError error = fetch_error(url);
  EXPECT_EQ(error.kind(), "connection");
  EXPECT_NE(std::string(error.what()).find("at byte 0 (4 attempts)"), std::string::npos) << error.what();
}

TEST(HttpStream, CancellingEndsAStalledRead) {
  Watchdog watchdog(std::chrono::seconds(30), "HttpStream cancel");
  const auto data = shared(pattern_bytes(100'000));
  HttpTestServer server([&](const HttpTestServer::Request&) {
    HttpTestServer::Reply reply;
    reply.body = data;
    reply.cut_after = 10;
    reply.stall = true;
    return reply;
  });
  detail::Cancellation cancellation;
  HttpOptions options = quick();
  options.low_speed_time = std::chrono::seconds(600);
  std::unique_ptr<detail::ByteStream> stream =
      detail::open_http_stream(server.url("/x"), options, &cancellation);
  EXPECT_EQ(stream->read().size(), 10u);
  std::thread canceller([&] { cancellation.cancel(); });
  try {
    stream->read();
    ADD_FAILURE() << "a cancelled read must throw";
  } catch (const detail::ShardReadError& error) {
    EXPECT_EQ(error.kind(), "cancelled");
  }
  canceller.join();
}

// Numbered shards served over HTTP, with an index.
struct ServedShards {
  TempDir dir;
  std::vector<std::string> files;
  std::unique_ptr<HttpTestServer> server;
};

std::vector<std::pair<std::string, Bytes>> load_files(const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, Bytes>> out;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::string name = "/";
    name += std::filesystem::path(path).filename().string();
    out.emplace_back(std::move(name), Bytes(std::istreambuf_iterator<char>(in), {}));
  }
  return out;
}

// The shards at `files` (samples per shard: `sizes`) as a server serves them, their wids index last as
// "/index.json" (the shards named by file name, relative to it).
std::vector<std::pair<std::string, Bytes>> shards_and_index(const std::vector<std::string>& files,
                                                            const std::vector<int>& sizes) {
  std::vector<std::pair<std::string, Bytes>> served = load_files(files);
  std::vector<std::string> names;
  for (const std::string& file : files) names.push_back(std::filesystem::path(file).filename().string());
  const std::string index = testing::shard_index_json(names, sizes);
  served.emplace_back("/index.json", Bytes(index.begin(), index.end()));
  return served;
}

TEST(HttpShards, ShardsOverHttpGiveTheSameBatchesAsLocalShards) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpShards same batches");
  TempDir dir;
  const std::vector<int> sizes{7, 5, 9};
  const std::vector<std::string> files = testing::write_numbered_shards(dir.path(), sizes);
  const std::vector<std::pair<std::string, Bytes>> served = shards_and_index(files, sizes);
  HttpTestServer server(testing::serve_files(served));
  const auto checksum = [](const Dataset& d) {
    return testing::checksum_of(
        d.shuffle(5, 1).map(testing::fill_from_seed({2, 3, 1})).with_options({.threads = 3}).batch(4));
  };
  TarShardOptions options;
  options.seed = 3;
  options.http = quick();
  const std::uint64_t local = checksum(Dataset::tar_shards(files, options));
  EXPECT_EQ(checksum(Dataset::tar_shard_index(server.url("/index.json"), options)), local);
  std::vector<std::string> urls;
  for (const auto& file : served)
    if (file.first != "/index.json") urls.push_back(server.url(file.first));
  // URLs without an index have no counts, so they are read one shard after another: as local shards are
  // when asked to.
  TarShardOptions one_at_a_time = options;
  one_at_a_time.parallel_shards = 1;
  EXPECT_EQ(checksum(Dataset::tar_shards(urls, options)),
            checksum(Dataset::tar_shards(files, one_at_a_time)));
  // Split across two ranks through the index: equal batches, every sample once.
  std::set<std::uint64_t> numbers;
  std::size_t counts[2] = {0, 0};
  for (int rank = 0; rank < 2; ++rank) {
    options.ranks.world_size = 2;
    options.ranks.rank = rank;
    for (const Sample& s :
         Dataset::tar_shard_index(server.url("/index.json"), options).with_options({.threads = 2})) {
      ++counts[rank];
      if (!s.padding) numbers.insert(testing::number_of(s));
    }
  }
  EXPECT_EQ(counts[0], counts[1]);
  EXPECT_EQ(numbers.size(), 21u);
}

TEST(HttpShards, AMissingShardFailsNamingItsUrlOrIsSkipped) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpShards 404");
  TempDir dir;
  const std::vector<std::string> files = testing::write_numbered_shards(dir.path(), {3});
  HttpTestServer server(testing::serve_files(load_files(files)));
  TarShardOptions options;
  options.http = quick();
  const std::vector<std::string> urls{server.url("/shard-000000.tar"), server.url("/shard-000001.tar")};
  try {
    for (const Sample& s : Dataset::tar_shards(urls, options).with_options({.threads = 2})) (void)s;
    FAIL() << "shard 1 does not exist";
  } catch (const PipelineError& error) {
    EXPECT_EQ(error.stage(), "read");
    EXPECT_NE(error.reason().find("'" + urls[1] + "': HTTP 404 at byte 0"), std::string::npos)
        << error.reason();
  }
  SampleIterator it =
      Dataset::tar_shards(urls, options).with_options({.threads = 2, .on_error = OnError::skip}).begin();
  std::size_t delivered = 0;
  while (it.next()) ++delivered;
  EXPECT_EQ(delivered, 3u);
  EXPECT_EQ(it.stats().skip_reasons.at("read: http_404"), 1u);
}

TEST(HttpShards, AShardCutShortEveryTimeFailsItsRestWithTheOffset) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpShards truncated");
  TempDir dir;
  const std::vector<std::string> files = testing::write_numbered_shards(dir.path(), {6});
  const auto body = shared(load_files(files)[0].second);
  HttpTestServer server([&](const HttpTestServer::Request& request) {
    HttpTestServer::Reply reply;
    reply.body = body;
    const std::size_t cut = 2 * 2048 + 100;  // inside the third sample
    reply.cut_after = cut - static_cast<std::size_t>(request.range_start.value_or(0));
    reply.reset = request.attempt % 2 == 1;  // dropped connections and short answers, in turn
    return reply;
  });
  TarShardOptions options;
  options.http = quick();
  const std::string index = testing::shard_index_json({server.url("/s.tar")}, {6});
  testing::write_file(dir / "index.json", Bytes(index.begin(), index.end()));
  SampleIterator it = Dataset::tar_shard_index((dir / "index.json").string(), options)
                          .with_options({.threads = 2, .on_error = OnError::skip})
                          .begin();
  std::size_t delivered = 0;
  while (it.next()) ++delivered;
  EXPECT_EQ(delivered, 2u);
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.skipped, 4u);
  EXPECT_EQ(stats.skipped_samples.at(0).path, server.url("/s.tar") + "#sample 2");
  EXPECT_NE(stats.skipped_samples.at(0).reason.find("at byte 4196"), std::string::npos)
      << stats.skipped_samples.at(0).reason;
  EXPECT_EQ(stats.skip_reasons.count("read: shard_failed"), 1u);
}

TEST(HttpShards, OutOfOrderAStalledShardDoesNotHoldBackTheOthers) {
  Watchdog watchdog(std::chrono::seconds(20), "HttpShards as ready");
  TempDir dir;
  const std::vector<int> sizes{6, 5, 7};
  const std::vector<std::string> files = testing::write_numbered_shards(dir.path(), sizes);
  const std::vector<std::pair<std::string, Bytes>> served = shards_and_index(files, sizes);
  const auto first = shared(served.front().second);
  const HttpTestServer::Handler files_handler = testing::serve_files(served);
  // The first shard sends its headers and then nothing until the server stops.
  HttpTestServer server([&](const HttpTestServer::Request& request) {
    if (request.path != "/shard-000000.tar") return files_handler(request);
    HttpTestServer::Reply reply;
    reply.body = first;
    reply.cut_after = 0;
    reply.stall = true;
    return reply;
  });
  TarShardOptions options;
  options.shuffle_shards = false;
  options.parallel_shards = 3;
  options.http = quick();
  options.http.low_speed_time = std::chrono::seconds(600);
  SampleIterator it = Dataset::tar_shard_index(server.url("/index.json"), options)
                          .with_options({.threads = 2, .deterministic = false})
                          .begin();
  // In order, the first next() would wait for the stalled shard's first sample; as ready, the other two
  // shards' 12 samples (numbers 6 to 17) come while it stalls.
  std::set<std::uint64_t> numbers;
  for (int i = 0; i < 12; ++i) {
    std::optional<Sample> sample = it.next();
    ASSERT_TRUE(sample.has_value());
    numbers.insert(testing::number_of(*sample));
  }
  EXPECT_EQ(numbers.size(), 12u);
  EXPECT_EQ(*numbers.begin(), 6u);
  EXPECT_EQ(*numbers.rbegin(), 17u);
}  // the iterator's destructor cancels the stalled transfer

TEST(HttpShards, DroppingTheIteratorDuringAStallReturns) {
  Watchdog watchdog(std::chrono::seconds(30), "HttpShards drop during stall");
  TempDir dir;
  const auto body = shared(load_files(testing::write_numbered_shards(dir.path(), {40}))[0].second);
  HttpTestServer server([&](const HttpTestServer::Request&) {
    HttpTestServer::Reply reply;
    reply.body = body;
    reply.cut_after = 5 * 2048;
    reply.stall = true;
    return reply;
  });
  TarShardOptions options;
  options.http = quick();
  options.http.low_speed_time = std::chrono::seconds(600);
  SampleIterator it =
      Dataset::tar_shards({server.url("/s.tar")}, options).with_options({.threads = 2}).begin();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(it.next().has_value());
}  // the iterator's destructor cancels the stalled transfer

}  // namespace
}  // namespace conveyor

namespace conveyor {
namespace {

// Plain HTTP shards through the shard cache: the server's size (Content-Range, or Content-Length from a
// server that ignores ranges) keys the entry; the second data set reads every shard from disk.
void expect_cached_second_time(bool ranges) {
  TempDir dir;
  const std::vector<int> sizes{4, 6};
  const std::vector<std::string> files = testing::write_numbered_shards(dir / "local", sizes);
  const std::vector<std::pair<std::string, Bytes>> served = load_files(files);
  const HttpTestServer::Handler files_handler = testing::serve_files(served);
  HttpTestServer server([&](const HttpTestServer::Request& request) {
    HttpTestServer::Reply reply = files_handler(request);
    reply.ranges = ranges;
    return reply;
  });
  std::vector<std::string> urls;
  for (const auto& file : served) urls.push_back(server.url(file.first));
  TarShardOptions options;
  options.http = quick();
  options.cache.folder = dir / "cache";
  options.cache.max_bytes = 1 << 20;
  for (const std::uint64_t hits : {0u, 2u}) {
    SampleIterator it = Dataset::tar_shards(urls, options).with_options({.threads = 2}).begin();
    std::set<std::uint64_t> numbers;
    while (std::optional<Sample> sample = it.next()) numbers.insert(testing::number_of(*sample));
    EXPECT_EQ(numbers.size(), 10u);
    const RemoteReadStats remote = it.stats().remote;
    EXPECT_EQ(remote.cache_hits, hits) << (ranges ? "ranges" : "no ranges");
    EXPECT_EQ(remote.cache_misses, 2u - hits);
    EXPECT_EQ(remote.bytes_fetched,
              hits == 0 ? std::filesystem::file_size(files[0]) + std::filesystem::file_size(files[1]) : 0u);
  }
}

TEST(HttpShards, TheShardCacheKeepsPlainHttpShards) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpShards cached");
  expect_cached_second_time(true);
}

TEST(HttpShards, TheShardCacheKeepsShardsOfAServerWithoutRanges) {
  Watchdog watchdog(std::chrono::seconds(60), "HttpShards cached without ranges");
  expect_cached_second_time(false);
}

}  // namespace
}  // namespace conveyor
