#include "src/sources/shard_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "src/sources/shard_read_error.h"

namespace conveyor::detail {

std::string describe_failure(const char* what, const std::string& path, int error) {
  return std::string(what) + " '" + path + "': " + std::generic_category().message(error);
}

MappedWindow::~MappedWindow() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

ShardFile::ShardFile(std::string path) : path_(std::move(path)) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; the fstat below refuses it.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw ShardReadError("io", describe_failure("cannot open", path_, errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    throw ShardReadError("io", describe_failure("cannot stat", path_, error));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw ShardReadError("io", "'" + path_ + "' is not a regular file");
  }
  size_ = static_cast<std::uint64_t>(info.st_size);
  // The shard is read front to back once: the kernel may read ahead further.
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

ShardFile::~ShardFile() { ::close(fd_); }

std::size_t ShardFile::read_at(std::uint64_t offset, std::span<std::uint8_t> into) const {
  for (;;) {
    const ssize_t n = ::pread(fd_, into.data(), into.size(), static_cast<off_t>(offset));
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EINTR)
      throw ShardReadError("io", describe_failure("cannot read", path_, errno) + " at byte " +
                                     std::to_string(offset));
  }
}

std::shared_ptr<const MappedWindow> ShardFile::map(std::uint64_t offset, std::size_t length) const {
  // Made before the map, so that once the map exists nothing can throw and the window owns it.
  std::shared_ptr<MappedWindow> window(new MappedWindow());
  if (offset >= size_ || length == 0) return window;
  const std::uint64_t end = offset + std::min<std::uint64_t>(length, size_ - offset);
  // A map starts at a page boundary: the window begins that far into it.
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t start = offset - offset % page;
  const auto map_size = static_cast<std::size_t>(end - start);
  void* map = ::mmap(nullptr, map_size, PROT_READ, MAP_PRIVATE, fd_, static_cast<off_t>(start));
  if (map == MAP_FAILED)
    throw ShardReadError("io", describe_failure("cannot map", path_, errno) + " at byte " +
                                   std::to_string(offset));
  // Read ahead further, and drop pages sooner, as for the file's read() calls.
  ::madvise(map, map_size, MADV_SEQUENTIAL);
  window->map_ = map;
  window->map_size_ = map_size;
  window->data_ = static_cast<const std::uint8_t*>(map) + (offset - start);
  window->size_ = static_cast<std::size_t>(end - offset);
  return window;
}

}  // namespace conveyor::detail
