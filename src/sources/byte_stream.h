// A shard's bytes, read front to back in chunks: from a local file, over HTTP(S), or from an object store.
// The tar reader pulls chunks through libarchive's read callback, so one reader serves all, and nothing
// holds a whole shard. ShardOpener (shard_opener.h) picks the stream for a location.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "conveyor/shards.h"
#include "src/sources/remote_request.h"

namespace conveyor::detail {

class Cancellation;
struct RemoteCounters;

class ByteStream {
 public:
  virtual ~ByteStream() = default;

  // The next chunk, valid until the next call; empty at the end. Throws ShardReadError (naming the
  // location and the byte offset) when the bytes cannot be had, also after retries.
  virtual std::span<const std::uint8_t> read() = 0;
  // Moves up to `bytes` forward without delivering them; returns how far it moved (0: the stream cannot
  // skip, and the caller reads through instead).
  virtual std::uint64_t skip(std::uint64_t bytes) = 0;
  // Bytes delivered or skipped so far.
  virtual std::uint64_t position() const noexcept = 0;
  // The file path or URL, for messages.
  virtual const std::string& location() const noexcept = 0;
  // The whole stream's size when known (a file's, a server's Content-Length), and the object's ETag as
  // the server sent it (empty when none did, or for files).
  virtual std::optional<std::uint64_t> size() const noexcept { return std::nullopt; }
  virtual const std::string& etag() const noexcept;
  // From now on the caller only drains what is left (a few MB at most, into a cache entry) while its
  // pipeline is being torn down: a remote stream then ignores that pipeline's cancellation and does not
  // retry, so that the drain neither fails because the epoch ended nor waits on back-offs.
  virtual void drain_only() noexcept {}
};

// True for http:// and https:// locations.
bool is_url(const std::string& location) noexcept;
// True for s3:// locations.
bool is_s3(const std::string& location) noexcept;
// Either: read through a server (and the shard cache, when there is one).
inline bool is_remote(const std::string& location) noexcept { return is_url(location) || is_s3(location); }

std::unique_ptr<ByteStream> open_file_stream(const std::string& path);
// `cancellation` (may be null) ends waits early and must outlive the stream; `counters` (may be null)
// count the bytes received and the retries.
std::unique_ptr<ByteStream> open_http_stream(RemoteRequest request, const HttpOptions& http,
                                             const Cancellation* cancellation, RemoteCounters* counters);
// A plain URL, with HttpOptions::headers.
std::unique_ptr<ByteStream> open_http_stream(const std::string& url, const HttpOptions& http,
                                             const Cancellation* cancellation);

// An object's size and ETag, as its server says them now.
struct ObjectVersion {
  std::optional<std::uint64_t> size;
  std::string etag;  // empty: the server gave none
};

// Asks the server for the object's size and ETag (a GET of its first byte: unlike HEAD, a refusal then
// carries the store's reason). Retries like a stream; throws ShardReadError naming the location.
ObjectVersion probe_object(const RemoteRequest& request, const HttpOptions& http,
                           const Cancellation* cancellation, RemoteCounters* counters);

}  // namespace conveyor::detail
