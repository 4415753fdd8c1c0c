// Where a data set's shards are read from: a local file, an http(s):// URL, or an s3:// URL (signed,
// s3_client.h), remote ones through the shard cache when there is one (shard_cache.h). One per data set,
// shared by its iterators; it counts what the remote reads did (RemoteReadStats).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/shards.h"
#include "conveyor/stats.h"
#include "src/sources/byte_stream.h"
#include "src/sources/remote_counters.h"
#include "src/sources/s3_client.h"
#include "src/sources/shard_cache.h"

namespace conveyor::detail {

class Cancellation;

class ShardOpener {
 public:
  // Makes the cache's folder when the options ask for a cache. Throws IoError when it cannot.
  explicit ShardOpener(const TarShardOptions& options);

  // Sets up what `locations` need (the S3 client: credentials, endpoint) now, so that a bad configuration
  // fails when the data set is made rather than in a reader thread. Throws InvalidArgument.
  void prepare(const std::vector<std::string>& locations);

  // True for "s3://bucket/" and "s3://bucket/prefix/": a prefix whose objects are the shards.
  static bool is_prefix(const std::string& location);
  // The shards under an s3:// prefix (ListObjectsV2): the objects named *.tar, *.tar.gz, *.tgz, *.tar.bz2,
  // *.tar.xz and *.tar.zst at any depth, by key; their sizes and ETags are kept for the cache's check.
  // Throws ShardReadError naming the prefix and the store's reason, InvalidArgument when it holds none.
  std::vector<std::string> list_shards(const std::string& prefix);

  // A stream on `location`. `cancellation` (may be null) must outlive it.
  std::unique_ptr<ByteStream> open(const std::string& location, const Cancellation* cancellation);

  RemoteReadStats stats() const noexcept { return counters_.snapshot(); }

 private:
  RemoteRequest request_for(const std::string& location);
  const S3Client& s3();
  // The object's size and ETag: from the listing, from an earlier check, or asked of the server now.
  ObjectVersion version_of(const std::string& location, const RemoteRequest& request,
                           const Cancellation* cancellation);

  const HttpOptions http_;
  RemoteCounters counters_;
  std::unique_ptr<ShardCache> cache_;  // null: no cache

  std::mutex mutex_;
  std::optional<S3Client> s3_;                     // made on the first s3:// location
  std::map<std::string, ObjectVersion> versions_;  // checked once per data set
};

}  // namespace conveyor::detail
