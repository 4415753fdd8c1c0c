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

// Memory that holds the bytes of the stream's last chunk, at the address read() gave them, for as long as
// `owner` lives (a mapped window): a reader may hand out views of it instead of copies.
struct StableBytes {
  std::span<const std::uint8_t> range;
  std::shared_ptr<const void> owner;  // null: the stream's chunks are valid only until its next read()
};

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
  // Where the last chunk's bytes stay valid beyond the next read(), if anywhere.
  virtual StableBytes stable_bytes() const { return {}; }
};

// How a local file's bytes are read.
enum class LocalReads {
  read_calls,  // read(2) into a buffer of the stream's, a chunk at a time
  mapped,      // the file mapped a window at a time (src/sources/shard_file.h): a window's bytes stay valid
               // while its owner lives (stable_bytes)
};

// True for http:// and https:// locations.
bool is_url(const std::string& location) noexcept;

// A stream on `location`: a URL through libcurl, anything else as a local file, read as `local` says.
// `cancellation` (may be null) ends waits early; it must outlive the stream.
std::unique_ptr<ByteStream> open_byte_stream(const std::string& location, const HttpOptions& http,
                                             const Cancellation* cancellation,
                                             LocalReads local = LocalReads::read_calls);
std::unique_ptr<ByteStream> open_file_stream(const std::string& path, LocalReads reads = LocalReads::read_calls);
// A mapped local file, `window_bytes` at a time (the default: 32 MiB; tests make it small).
inline constexpr std::size_t kMapWindowBytes = std::size_t{32} << 20;
std::unique_ptr<ByteStream> open_mapped_file_stream(const std::string& path,
                                                    std::size_t window_bytes = kMapWindowBytes);
std::unique_ptr<ByteStream> open_http_stream(const std::string& url, const HttpOptions& http,
                                             const Cancellation* cancellation);

}  // namespace conveyor::detail
