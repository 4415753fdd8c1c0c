#include "src/sources/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "src/sources/shard_read_error.h"

namespace conveyor::detail {
namespace {

std::string failure(const char* what, const std::string& path, int error) {
  return std::string(what) + " '" + path + "': " + std::generic_category().message(error);
}

// Closes the descriptor when the mapping is made or has failed (a mapping does not need it open).
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; the fstat below refuses it.
  const Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) throw ShardReadError("io", failure("cannot open", path, errno));
  struct stat info {};
  if (::fstat(file.fd, &info) != 0) throw ShardReadError("io", failure("cannot stat", path, errno));
  if (!S_ISREG(info.st_mode)) throw ShardReadError("io", "'" + path + "' is not a regular file");
  // Made before the mapping, so that once the mapping exists nothing but the return can throw, and the
  // unique_ptr unmaps it then (a shared_ptr made from it leaves it owning when the conversion throws).
  std::unique_ptr<MappedFile> mapped(new MappedFile(path));
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size == 0) return mapped;
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (data == MAP_FAILED) throw ShardReadError("io", failure("cannot map", path, errno));
  mapped->data_ = static_cast<const std::uint8_t*>(data);
  mapped->size_ = size;
  // The shard is read front to back once: the kernel may read ahead further and drop pages sooner.
  ::madvise(data, size, MADV_SEQUENTIAL);
  return mapped;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

}  // namespace conveyor::detail
