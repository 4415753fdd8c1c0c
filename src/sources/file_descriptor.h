// A POSIX file descriptor, closed when its owner goes; and the message for a call on a file that failed.
#pragma once

#include <unistd.h>

#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace conveyor::detail {

// "cannot open 'PATH': No such file or directory" (`what`, the path, errno's text).
inline std::string io_failure(const char* what, std::string_view path, int error) {
  return std::string(what) + " '" + std::string(path) + "': " + std::generic_category().message(error);
}

class FileDescriptor {
 public:
  FileDescriptor() noexcept = default;
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const noexcept { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace conveyor::detail
