#include "conveyor/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "conveyor/error.h"
#include "src/sources/file_descriptor.h"

namespace conveyor {

void read_file(const char* path, std::vector<std::uint8_t>& bytes, std::size_t max_bytes) {
  using detail::FileDescriptor;
  using detail::io_failure;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever (and a pipeline
  // iterator's destructor with it); the fstat below then refuses it. Regular files ignore the flag.
  FileDescriptor fd(::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) throw IoError(io_failure("cannot open", path, errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) throw IoError(io_failure("cannot stat", path, errno));
  if (!S_ISREG(info.st_mode)) throw IoError(std::string("'") + path + "' is not a regular file");
  const auto size = static_cast<std::size_t>(info.st_size);
  if (max_bytes != 0 && size > max_bytes) {
    throw IoError(std::string("'") + path + "' is " + std::to_string(size) + " bytes, over the limit of " +
                  std::to_string(max_bytes) + " (in a pipeline: PipelineOptions::max_file_bytes)");
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

}  // namespace conveyor
