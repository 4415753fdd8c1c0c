#include "src/sources/shard_set.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <nlohmann/json.hpp>

#include "conveyor/error.h"
#include "src/sources/byte_stream.h"
#include "src/sources/shard_read_error.h"

namespace conveyor::detail {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string extension_of(std::string extension) {
  if (!extension.empty() && extension.front() == '.') extension.erase(0, 1);
  return lower(std::move(extension));
}

// The folder part of a path or URL, with its trailing slash ("" for a bare name).
std::string base_of(const std::string& location) {
  const std::size_t slash = location.rfind('/');
  if (slash == std::string::npos) return {};
  if (is_remote(location) && slash < location.find("://") + 3) return location + "/";  // "http://host"
  return location.substr(0, slash + 1);
}

bool is_absolute(const std::string& location) {
  return location.starts_with("/") || location.find("://") != std::string::npos;
}

}  // namespace

bool ShardSet::counted() const noexcept {
  return std::all_of(shards.begin(), shards.end(), [](const ShardInfo& s) { return s.samples.has_value(); });
}

std::uint64_t ShardSet::total() const noexcept {
  std::uint64_t sum = 0;
  for (const ShardInfo& shard : shards) sum += shard.samples.value_or(0);
  return counted() ? sum : 0;
}

ShardSet make_shard_set(std::vector<ShardInfo> listed, const TarShardOptions& options,
                        std::shared_ptr<ShardOpener> opener) {
  const Ranks& ranks = options.ranks;
  if (listed.empty()) throw InvalidArgument("Dataset::tar_shards: no shards");
  if (!opener) opener = std::make_shared<ShardOpener>(options);
  std::vector<ShardInfo> shards;
  for (ShardInfo& shard : listed) {
    if (!ShardOpener::is_prefix(shard.location)) {
      shards.push_back(std::move(shard));
      continue;
    }
    for (std::string& location : opener->list_shards(shard.location))
      shards.push_back({std::move(location), std::nullopt});
  }
  std::vector<std::string> locations;
  for (const ShardInfo& shard : shards) locations.push_back(shard.location);
  opener->prepare(locations);
  for (const ShardInfo& shard : shards)
    if (shard.location.empty()) throw InvalidArgument("Dataset::tar_shards: an empty shard name");
  if (ranks.world_size < 1 || ranks.rank < 0 || ranks.rank >= ranks.world_size)
    throw InvalidArgument("Dataset::tar_shards: rank " + std::to_string(ranks.rank) + " of world size " +
                          std::to_string(ranks.world_size));
  if (options.parallel_shards == 0 || options.queued_samples == 0)
    throw InvalidArgument("Dataset::tar_shards: parallel_shards and queued_samples must be at least 1");
  if (options.image_extensions.empty()) throw InvalidArgument("Dataset::tar_shards: no image extension");
  if (options.http.retries < 0) throw InvalidArgument("Dataset::tar_shards: http.retries must be >= 0");
  if (options.random_access && ranks.world_size > 1)
    throw InvalidArgument(
        "Dataset::tar_shards: with random_access the samples are a table: leave ranks at "
        "one rank and split them with shuffle().shard(ranks), as files are split");

  ShardSet set;
  set.options = options;
  set.format.image_extensions.clear();
  for (const std::string& extension : options.image_extensions)
    set.format.image_extensions.push_back(extension_of(extension));
  set.format.label_extension = extension_of(options.label_extension);
  set.format.require_label = options.require_label;
  set.format.mask_extension = extension_of(options.mask_extension);
  set.format.fields_extension = extension_of(options.fields_extension);
  set.shards = std::move(shards);
  set.opener = opener;
  // Splitting the epoch's samples across ranks needs every shard's count: a rank must know where its
  // share begins without reading the shards before it. Interleaving several shards (parallel_shards > 1,
  // shard_streamer.h) needs them too, so that a sample's index stays its position in the epoch's order:
  // local files are counted then (headers only), URLs without a count are read one after another.
  // Read at random, the shards are located whole when the source is made (shard_members.h): no counts.
  const bool interleaved = options.parallel_shards > 1 && !options.random_access;
  if (ranks.world_size > 1 || interleaved) {
    for (ShardInfo& shard : set.shards) {
      if (shard.samples) continue;
      if (is_remote(shard.location)) {
        if (ranks.world_size == 1) continue;
        throw InvalidArgument("Dataset::tar_shards: splitting shards across " +
                              std::to_string(ranks.world_size) +
                              " ranks needs each shard's sample count, and '" + shard.location +
                              "' has none: read the shards through a shard index (Dataset::tar_shard_index; "
                              "make_shards writes one)");
      }
      if (ranks.world_size > 1) {
        shard.samples = count_samples(shard.location, set.format, *opener);
        continue;
      }
      // Only for interleaving: a shard that cannot be counted stays uncounted (its samples then fail where
      // they are read, one by one, like any broken shard's), and the set is read one shard at a time.
      try {
        shard.samples = count_samples(shard.location, set.format, *opener);
      } catch (const std::exception&) {
        break;
      }
    }
  }
  return set;
}

std::vector<ShardInfo> parse_shard_index(const std::string& json, const std::string& index_location) {
  const auto bad = [&](const std::string& what) {
    return InvalidArgument("shard index '" + index_location + "': " + what);
  };
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(json);
  } catch (const nlohmann::json::parse_error& error) {
    throw bad(std::string("not JSON: ") + error.what());
  }
  if (!document.is_object() || !document.contains("shardlist") || !document["shardlist"].is_array())
    throw bad("no \"shardlist\" array (a wids-shard-index-v1 document is expected)");
  const std::string base = base_of(index_location);
  std::vector<ShardInfo> shards;
  std::size_t i = 0;
  for (const nlohmann::json& entry : document["shardlist"]) {
    const std::string which = "shardlist[" + std::to_string(i++) + "]";
    if (!entry.is_object() || !entry.contains("url") || !entry["url"].is_string())
      throw bad(which + " has no \"url\" string");
    ShardInfo shard;
    const std::string url = entry["url"].get<std::string>();
    if (url.empty()) throw bad(which + " has an empty \"url\"");
    shard.location = is_absolute(url) ? url : base + url;
    if (entry.contains("nsamples")) {
      const nlohmann::json& count = entry["nsamples"];
      if (!count.is_number_integer() || count.get<std::int64_t>() < 0)
        throw bad(which + ": \"nsamples\" is not a non-negative integer");
      shard.samples = count.get<std::uint64_t>();
    }
    shards.push_back(std::move(shard));
  }
  if (shards.empty()) throw bad("the shard list is empty");
  return shards;
}

std::string read_small_file(const std::string& location, ShardOpener& opener, std::size_t max_bytes) {
  std::unique_ptr<ByteStream> stream = opener.open(location, nullptr);
  std::string text;
  for (std::span<const std::uint8_t> chunk = stream->read(); !chunk.empty(); chunk = stream->read()) {
    if (text.size() + chunk.size() > max_bytes)
      throw IoError("'" + location + "' is larger than " + std::to_string(max_bytes) + " bytes");
    text.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
  }
  return text;
}

std::uint64_t count_samples(const std::string& location, const TarFormat& format, ShardOpener& opener) {
  TarSampleReader reader(opener.open(location, nullptr), format);
  return reader.skip(UINT64_MAX);
}

}  // namespace conveyor::detail
