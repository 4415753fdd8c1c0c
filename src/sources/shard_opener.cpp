#include "src/sources/shard_opener.h"

#include <cstdlib>

#include "conveyor/error.h"
#include "src/core/user_cache_folder.h"
#include "src/sources/aws_credentials.h"

namespace conveyor::detail {
namespace {

bool is_shard_name(const std::string& key) {
  for (const char* suffix : {".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar.zst"})
    if (key.ends_with(suffix)) return true;
  return false;
}

std::filesystem::path cache_folder(const ShardCacheOptions& options) {
  if (!options.folder.empty()) return options.folder;
  const std::optional<std::filesystem::path> base = user_cache_folder(
      {}, std::getenv("CONVEYOR_ALGORITHM_CACHE"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  if (!base)
    throw InvalidArgument(
        "shard cache: no folder for it (CONVEYOR_ALGORITHM_CACHE is \"off\", or there is no HOME): set "
        "ShardCacheOptions::folder");
  return *base / "shards";
}

}  // namespace

ShardOpener::ShardOpener(const TarShardOptions& options) : http_(options.http) {
  if (options.cache.max_bytes > 0)
    cache_ = std::make_unique<ShardCache>(cache_folder(options.cache), options.cache.max_bytes, counters_);
}

void ShardOpener::prepare(const std::vector<std::string>& locations) {
  for (const std::string& location : locations)
    if (is_s3(location)) {
      parse_s3_location(location);
      s3();
    }
}

bool ShardOpener::is_prefix(const std::string& location) {
  if (!is_s3(location)) return false;
  const S3Location parsed = parse_s3_location(location);
  return parsed.key.empty() || parsed.key.ends_with('/');
}

const S3Client& ShardOpener::s3() {
  std::lock_guard lock(mutex_);
  if (!s3_) s3_.emplace(http_.s3, AwsEnvironment::of_process());
  return *s3_;
}

std::vector<std::string> ShardOpener::list_shards(const std::string& prefix) {
  const S3Location where = parse_s3_location(prefix);
  // Not counted: bytes_fetched counts the shards' bytes only.
  const std::vector<ListedObject> objects = s3().list(where.bucket, where.key, http_, nullptr, nullptr);
  std::vector<std::string> shards;
  std::lock_guard lock(mutex_);
  for (const ListedObject& object : objects) {
    if (!is_shard_name(object.key)) continue;
    std::string location = "s3://" + where.bucket + "/" + object.key;
    versions_[location] = ObjectVersion{object.size, object.etag};
    shards.push_back(std::move(location));
  }
  if (shards.empty())
    throw InvalidArgument("'" + prefix + "' holds no shards (objects named *.tar, *.tar.gz, ...; " +
                          std::to_string(objects.size()) + " objects in all)");
  return shards;
}

RemoteRequest ShardOpener::request_for(const std::string& location) {
  if (is_s3(location)) return s3().object(parse_s3_location(location));
  return RemoteRequest{location, location, http_.headers, {}, {}};
}

ObjectVersion ShardOpener::version_of(const std::string& location, const RemoteRequest& request,
                                      const Cancellation* cancellation) {
  {
    std::lock_guard lock(mutex_);
    if (const auto known = versions_.find(location); known != versions_.end()) return known->second;
  }
  ObjectVersion version = probe_object(request, http_, cancellation, &counters_);
  std::lock_guard lock(mutex_);
  return versions_.emplace(location, std::move(version)).first->second;
}

std::unique_ptr<ByteStream> ShardOpener::open(const std::string& location, const Cancellation* cancellation) {
  if (!is_remote(location)) return open_file_stream(location);
  RemoteCounters::add(counters_.shards_opened);
  RemoteRequest request = request_for(location);
  if (!cache_) {
    RemoteCounters::add(counters_.uncached);
    return open_http_stream(std::move(request), http_, cancellation, &counters_);
  }
  const ObjectVersion version = version_of(location, request, cancellation);
  if (version.size)
    if (std::unique_ptr<ByteStream> cached = cache_->open_cached(location, version)) return cached;
  return cache_->fill(location, version,
                      open_http_stream(std::move(request), http_, cancellation, &counters_));
}

}  // namespace conveyor::detail
