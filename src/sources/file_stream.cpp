// ByteStreams over a local shard file: large sequential reads, skips by moving the offset (libarchive skips
// member data through skip(), so counting a shard's samples reads only its headers); or the file mapped a
// window at a time, each window one chunk, so that libarchive hands out member data where it lies in the
// map and skips by moving a pointer.
#include <algorithm>
#include <vector>

#include "src/sources/byte_stream.h"
#include "src/sources/shard_file.h"

namespace conveyor::detail {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

class FileStream final : public ByteStream {
 public:
  explicit FileStream(std::string path) : file_(std::move(path)) {}

  std::span<const std::uint8_t> read() override {
    buffer_.resize(kChunkBytes);
    const std::size_t n = file_.read_at(position_, buffer_);
    position_ += n;
    return {buffer_.data(), n};
  }

  std::uint64_t skip(std::uint64_t bytes) override { return advance(position_, file_.size(), bytes); }
  std::uint64_t position() const noexcept override { return position_; }
  const std::string& location() const noexcept override { return file_.path(); }

  // Moves `position` up to `bytes` forward, not past `size`; returns how far.
  static std::uint64_t advance(std::uint64_t& position, std::uint64_t size, std::uint64_t bytes) {
    const std::uint64_t step = std::min(bytes, size - std::min(position, size));
    position += step;
    return step;
  }

 private:
  ShardFile file_;
  std::uint64_t position_ = 0;
  std::vector<std::uint8_t> buffer_;
};

class MappedFileStream final : public ByteStream {
 public:
  MappedFileStream(std::string path, std::size_t window_bytes)
      : file_(std::move(path)), window_bytes_(std::max<std::size_t>(window_bytes, 1)) {}

  // The next window in one chunk: libarchive hands out the members inside it where they lie, and joins only
  // what straddles two windows in a buffer of its own.
  std::span<const std::uint8_t> read() override {
    window_ = file_.map(position_, window_bytes_);
    position_ += window_->bytes().size();
    return window_->bytes();
  }

  std::uint64_t skip(std::uint64_t bytes) override {
    return FileStream::advance(position_, file_.size(), bytes);
  }
  std::uint64_t position() const noexcept override { return position_; }
  const std::string& location() const noexcept override { return file_.path(); }
  StableBytes stable_bytes() const override {
    if (!window_) return {};
    return {window_->bytes(), window_};
  }

 private:
  ShardFile file_;
  const std::size_t window_bytes_;
  std::shared_ptr<const MappedWindow> window_;  // the last chunk read() gave
  std::uint64_t position_ = 0;
};

}  // namespace

std::unique_ptr<ByteStream> open_file_stream(const std::string& path, LocalReads reads) {
  if (reads == LocalReads::mapped) return open_mapped_file_stream(path);
  return std::make_unique<FileStream>(path);
}

std::unique_ptr<ByteStream> open_mapped_file_stream(const std::string& path, std::size_t window_bytes) {
  return std::make_unique<MappedFileStream>(path, window_bytes);
}

}  // namespace conveyor::detail
