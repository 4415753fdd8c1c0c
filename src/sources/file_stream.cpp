// ByteStream over a local file: large sequential reads, skips by seeking (libarchive skips member data
// through skip(), so counting a shard's samples reads only its headers).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <vector>

#include "src/sources/byte_stream.h"
#include "src/sources/file_descriptor.h"
#include "src/sources/shard_read_error.h"

namespace conveyor::detail {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

class FileStream final : public ByteStream {
 public:
  explicit FileStream(std::string path) : path_(std::move(path)) {
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; the fstat below refuses it.
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) throw ShardReadError("io", io_failure("cannot open", path_, errno));
    struct stat info {};
    if (::fstat(fd_, &info) != 0) {
      const int error = errno;
      ::close(fd_);
      throw ShardReadError("io", io_failure("cannot stat", path_, error));
    }
    if (!S_ISREG(info.st_mode)) {
      ::close(fd_);
      throw ShardReadError("io", "'" + path_ + "' is not a regular file");
    }
    size_ = static_cast<std::uint64_t>(info.st_size);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~FileStream() override { ::close(fd_); }
  FileStream(const FileStream&) = delete;
  FileStream& operator=(const FileStream&) = delete;

  std::span<const std::uint8_t> read() override {
    buffer_.resize(kChunkBytes);
    for (;;) {
      const ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
      if (n >= 0) {
        position_ += static_cast<std::uint64_t>(n);
        return {buffer_.data(), static_cast<std::size_t>(n)};
      }
      if (errno != EINTR)
        throw ShardReadError(
            "io", io_failure("cannot read", path_, errno) + " at byte " + std::to_string(position_));
    }
  }

  std::uint64_t skip(std::uint64_t bytes) override {
    const std::uint64_t left = position_ < size_ ? size_ - position_ : 0;
    const std::uint64_t step = bytes < left ? bytes : left;
    if (step == 0) return 0;
    if (::lseek(fd_, static_cast<off_t>(step), SEEK_CUR) < 0) return 0;  // read through instead
    position_ += step;
    return step;
  }

  std::uint64_t position() const noexcept override { return position_; }
  const std::string& location() const noexcept override { return path_; }
  std::optional<std::uint64_t> size() const noexcept override { return size_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t position_ = 0;
  std::vector<std::uint8_t> buffer_;
};

}  // namespace

std::unique_ptr<ByteStream> open_file_stream(const std::string& path) {
  return std::make_unique<FileStream>(path);
}

}  // namespace conveyor::detail
