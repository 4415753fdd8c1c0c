// A shard's bytes, read front to back in chunks: from a local file or over HTTP(S). The tar reader pulls
// chunks through libarchive's read callback, so one reader serves both, and nothing holds a whole shard.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "conveyor/shards.h"

namespace conveyor::detail {

class Cancellation;

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
};

// True for http:// and https:// locations.
bool is_url(const std::string& location) noexcept;

// A stream on `location`: a URL through libcurl, anything else as a local file. `cancellation` (may be
// null) ends waits early; it must outlive the stream.
std::unique_ptr<ByteStream> open_byte_stream(const std::string& location, const HttpOptions& http,
                                             const Cancellation* cancellation);
std::unique_ptr<ByteStream> open_file_stream(const std::string& path);
std::unique_ptr<ByteStream> open_http_stream(const std::string& url, const HttpOptions& http,
                                             const Cancellation* cancellation);

}  // namespace conveyor::detail
