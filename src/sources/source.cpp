#include "src/sources/source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "conveyor/error.h"
#include "src/sources/shard_set.h"

namespace conveyor::detail {
namespace {

// Closes a POSIX file descriptor.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

std::string io_failure(const char* what, const char* path, int error) {
  return std::string(what) + " '" + path + "': " + std::generic_category().message(error);
}

}  // namespace

void PathTable::add(std::string_view path) {
  offsets_.push_back(blob_.size());
  blob_.append(path);
  blob_.push_back('\0');
}

void PathTable::reserve(std::size_t paths, std::size_t bytes) {
  offsets_.reserve(paths);
  blob_.reserve(bytes);
}

std::string_view PathTable::operator[](std::size_t i) const noexcept {
  const std::size_t end = i + 1 < offsets_.size() ? offsets_[i + 1] : blob_.size();
  return std::string_view(blob_.data() + offsets_[i], end - offsets_[i] - 1);
}

void read_file(const char* path, std::vector<std::uint8_t>& bytes, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever (and the iterator's
  // destructor with it); the fstat below then refuses it. Regular files ignore the flag.
  FileDescriptor fd(::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) throw IoError(io_failure("cannot open", path, errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) throw IoError(io_failure("cannot stat", path, errno));
  if (!S_ISREG(info.st_mode)) throw IoError(std::string("'") + path + "' is not a regular file");
  const auto size = static_cast<std::size_t>(info.st_size);
  if (max_bytes != 0 && size > max_bytes) {
    throw IoError(std::string("'") + path + "' is " + std::to_string(size) + " bytes, over the limit of " +
                  std::to_string(max_bytes) + " (PipelineOptions::max_file_bytes)");
  }
  bytes.resize(size);
  std::size_t got = 0;
  // One read() returns the whole file for regular files; the loop only covers signals and files that
  // change size while being read.
  while (got < size) {
    const ssize_t n = ::read(fd.get(), bytes.data() + got, size - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(io_failure("cannot read", path, errno));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  bytes.resize(got);
}

std::shared_ptr<const Source> Source::files(FileListing listing) {
  auto source = std::make_shared<Source>();
  source->paths_ = std::move(listing.paths);
  source->labels_ = std::move(listing.labels);
  source->class_names_ = std::move(listing.class_names);
  return source;
}

std::shared_ptr<const Source> Source::memory(std::vector<std::vector<std::uint8_t>> buffers,
                                             std::vector<std::int64_t> labels) {
  auto source = std::make_shared<Source>();
  for (std::size_t i = 0; i < buffers.size(); ++i) source->paths_.add("<memory:" + std::to_string(i) + ">");
  source->labels_ = std::move(labels);
  source->buffers_ = std::move(buffers);
  return source;
}

std::shared_ptr<const Source> Source::shards(std::shared_ptr<const ShardSet> shards) {
  auto source = std::make_shared<Source>();
  source->stream_size_ = static_cast<std::size_t>(shards->total());
  source->shards_ = std::move(shards);
  return source;
}

void Source::load(std::size_t i, std::vector<std::uint8_t>& bytes, std::size_t max_bytes) const {
  if (buffers_.empty()) {
    read_file(paths_.c_str(i), bytes, max_bytes);
  } else {
    bytes.assign(buffers_[i].begin(), buffers_[i].end());
  }
}

}  // namespace conveyor::detail
