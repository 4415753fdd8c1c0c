// An advisory lock (flock) on a file, held by an open descriptor and released when it closes: the kernel
// drops it when the process dies, so a killed holder never leaves the lock taken.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <utility>

namespace conveyor::detail {

class FileLock {
 public:
  FileLock() = default;
  // Opens (creating) `path` and takes its lock: exclusive, without waiting when `wait` is false. locked()
  // says whether it did. Without waiting, the lock is kept only while `path` still names the locked file
  // (another process may have renamed or deleted it between the open and the lock).
  FileLock(const std::filesystem::path& path, bool wait) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    struct stat held {
    }, named{};
    if (::flock(fd_, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
      held_elsewhere_ = errno == EWOULDBLOCK;
      close();
      return;
    }
    if (::fstat(fd_, &held) != 0 || ::stat(path.c_str(), &named) != 0 || held.st_ino != named.st_ino ||
        held.st_dev != named.st_dev) {
      close();
      return;
    }
    locked_ = true;
  }
  ~FileLock() { close(); }
  FileLock(FileLock&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)),
        locked_(std::exchange(other.locked_, false)),
        held_elsewhere_(std::exchange(other.held_elsewhere_, false)) {}
  FileLock& operator=(FileLock&& other) noexcept {
    if (this != &other) {
      close();
      fd_ = std::exchange(other.fd_, -1);
      locked_ = std::exchange(other.locked_, false);
      held_elsewhere_ = std::exchange(other.held_elsewhere_, false);
    }
    return *this;
  }

  bool locked() const noexcept { return locked_; }
  // Not locked because another descriptor holds the lock (rather than: the file could not be opened, or
  // `path` was renamed or deleted between the open and the lock, when taking it again may succeed).
  bool held_elsewhere() const noexcept { return held_elsewhere_; }
  int fd() const noexcept { return fd_; }

 private:
  void close() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    locked_ = false;
  }
  int fd_ = -1;
  bool locked_ = false;
  bool held_elsewhere_ = false;
};

}  // namespace conveyor::detail
