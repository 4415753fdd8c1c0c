#include "data/common/tool_support.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace conveyor::data {
namespace {

// An open file descriptor, closed with it.
class Fd {
 public:
  Fd(const std::filesystem::path& path, int flags) : fd_(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  // close() reports write-back errors that write() did not.
  int close() noexcept { return ::close(std::exchange(fd_, -1)); }

 private:
  int fd_;
};

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path) {
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}

}  // namespace

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  Fd fd(path, O_RDONLY);
  if (fd.get() < 0) fail("cannot open", path);
  std::vector<std::uint8_t> bytes;
  std::uint8_t chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot read", path);
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  return bytes;
}

void write_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  Fd fd(path, O_WRONLY | O_CREAT | O_TRUNC);
  if (fd.get() < 0) fail("cannot create", path);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot write", path);
    done += static_cast<std::size_t>(n);
  }
  if (fd.close() != 0) fail("cannot close", path);
}

std::span<const std::uint8_t> JpegEncoder::encode(const std::uint8_t* pixels, int width, int height,
                                                  int pixel_format, int subsampling, int quality) {
  const unsigned long capacity = tjBufSize(width, height, subsampling);
  if (buffer_.size() < capacity) buffer_.resize(capacity);
  unsigned char* out = buffer_.data();
  unsigned long size = 0;
  // NOREALLOC: write into our buffer, which tjBufSize made large enough for any quality.
  if (tjCompress2(handle_.get(), pixels, width, 0, height, pixel_format, &out, &size, subsampling, quality,
                  TJFLAG_NOREALLOC) != 0)
    throw std::runtime_error("JPEG encoding failed: " + handle_.error());
  return {buffer_.data(), size};
}

}  // namespace conveyor::data
