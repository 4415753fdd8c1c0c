#include "conveyor/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "conveyor/error.h"

namespace conveyor {
namespace {

[[noreturn]] void fail(const std::filesystem::path& target, const char* call, int error) {
  throw IoError("cannot write '" + target.string() + "': " + call + " failed: " + std::strerror(error));
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
  // mkstemp: a fresh name in the target's folder, so that two writers never share a temporary.
  std::string pattern = target_.string() + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd_ = ::mkstemp(name.data());
  if (fd_ < 0) fail(target_, "mkstemp", errno);
  temporary_ = name.data();
  ::fchmod(fd_, 0644);  // mkstemp makes 0600; the file replaces an ordinary one
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temporary_.c_str());
  }
}

void AtomicFile::write(const void* data, std::size_t size) {
  if (fd_ < 0) throw IoError("cannot write '" + target_.string() + "': already committed");
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail(target_, "write", errno);
    }
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw IoError("cannot write '" + target_.string() + "': already committed");
  if (::fsync(fd_) != 0) fail(target_, "fsync", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temporary_.c_str());
    fail(target_, "close", error);
  }
  if (::rename(temporary_.c_str(), target_.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary_.c_str());
    fail(target_, "rename", error);
  }
  // The rename lives in the folder's entry: sync it too, or a power cut may forget it.
  const std::filesystem::path folder = target_.has_parent_path() ? target_.parent_path() : ".";
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomically(const std::filesystem::path& target, std::string_view content) {
  AtomicFile file(target);
  file.write(content);
  file.commit();
}

}  // namespace conveyor
