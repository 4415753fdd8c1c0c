#include "src/service/common/shared_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "conveyor/error.h"

namespace conveyor::service::detail {
namespace {

constexpr std::size_t kPage = 4096;
constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

std::size_t round_to_pages(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

[[noreturn]] void fail(const std::string& what) {
  throw IoError("shared memory: " + what + ": " + std::strerror(errno));
}

// "/proc/PID/fd/N", digits only: a worker names no other file for a trainer to open.
bool is_proc_fd_path(const std::string& path) {
  const auto digits = [&](std::size_t from, std::size_t to) {
    if (from >= to) return false;
    for (std::size_t i = from; i < to; ++i)
      if (path[i] < '0' || path[i] > '9') return false;
    return true;
  };
  constexpr std::string_view proc = "/proc/", fd = "/fd/";
  if (!path.starts_with(proc)) return false;
  const std::size_t mid = path.find(fd, proc.size());
  return mid != std::string::npos && digits(proc.size(), mid) && digits(mid + fd.size(), path.size());
}

}  // namespace

// ---- SharedRegion ----

SharedRegion::SharedRegion(std::size_t bytes) : bytes_(round_to_pages(bytes)) {
  if (bytes_ <= kHeaderBytes)
    throw InvalidArgument("shared memory: a region needs more than its header page");
  fd_ = ::memfd_create("conveyor-batches", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd_ < 0) fail("memfd_create");
  // The destructor does not run for a constructor that throws: the file is closed here (errno kept for fail).
  const auto close_and_fail = [this](const std::string& what) {
    const int error = errno;
    ::close(fd_);
    errno = error;
    fail(what);
  };
  // Sealed at its size: a trainer that maps it can trust it never shrinks under its reads (SIGBUS).
  if (::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0 || ::fcntl(fd_, F_ADD_SEALS, kSeals) != 0)
    close_and_fail("sizing the region");
  void* mapped = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (mapped == MAP_FAILED) close_and_fail("mmap");
  data_ = static_cast<std::byte*>(mapped);
  std::random_device entropy;
  nonce_ = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
  std::memcpy(data_, &nonce_, sizeof nonce_);
  path_ = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_);
}

SharedRegion::~SharedRegion() {
  ::munmap(data_, bytes_);
  ::close(fd_);
}

// ---- SharedRegionMemory ----

SharedRegionMemory::SharedRegionMemory(std::shared_ptr<SharedRegion> region,
                                       std::shared_ptr<HostMemoryResource> fallback)
    : region_(std::move(region)), fallback_(fallback ? std::move(fallback) : pageable_host_memory()) {
  free_.emplace(SharedRegion::kHeaderBytes, region_->bytes() - SharedRegion::kHeaderBytes);
}

void* SharedRegionMemory::allocate(std::size_t bytes) {
  const std::size_t size = round_to_pages(std::max<std::size_t>(bytes, 1));
  {
    std::lock_guard lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < size) continue;
      const auto [offset, available] = *it;
      free_.erase(it);
      if (available > size) free_.emplace(offset + size, available - size);
      used_ += size;
      return region_->data() + offset;
    }
  }
  return fallback_->allocate(bytes);
}

void SharedRegionMemory::deallocate(void* memory, std::size_t bytes) noexcept {
  const std::optional<std::uint64_t> offset = offset_of(memory, bytes);
  if (!offset) return fallback_->deallocate(memory, bytes);
  std::size_t start = *offset, size = round_to_pages(std::max<std::size_t>(bytes, 1));
  std::lock_guard lock(mutex_);
  used_ -= size;
  // Merged with the free blocks on either side, so that first fit finds whole batches' room again.
  auto next = free_.lower_bound(start);
  if (next != free_.end() && start + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    const auto previous = std::prev(next);
    if (previous->first + previous->second == start) {
      start = previous->first;
      size += previous->second;
      free_.erase(previous);
    }
  }
  free_.emplace(start, size);
}

std::optional<std::uint64_t> SharedRegionMemory::offset_of(const void* memory,
                                                           std::size_t bytes) const noexcept {
  const auto* p = static_cast<const std::byte*>(memory);
  const std::byte* const begin = region_->data();
  if (p < begin + SharedRegion::kHeaderBytes || p > begin + region_->bytes() ||
      bytes > static_cast<std::size_t>(begin + region_->bytes() - p))
    return std::nullopt;
  return static_cast<std::uint64_t>(p - begin);
}

std::size_t SharedRegionMemory::used_bytes() const {
  std::lock_guard lock(mutex_);
  return used_;
}

// ---- MappedRegion ----

MappedRegion::MappedRegion(const std::string& path, std::uint64_t nonce, std::size_t bytes) : bytes_(bytes) {
  if (!is_proc_fd_path(path)) throw IoError("shared memory: '" + path + "' is not a /proc/PID/fd/N");
  if (bytes <= SharedRegion::kHeaderBytes)
    throw IoError("shared memory: a region of " + std::to_string(bytes) + " bytes");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("opening " + path + " (another host or PID namespace, or no permission)");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } const closer{fd};
  struct stat about {};
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (static_cast<unsigned>(seals) & F_SEAL_SHRINK) == 0)
    throw IoError("shared memory: " + path + " is not a sealed memory file");
  if (::fstat(fd, &about) != 0 || static_cast<std::size_t>(about.st_size) != bytes)
    throw IoError("shared memory: " + path + " is not the region of " + std::to_string(bytes) +
                  " bytes offered");
  void* mapped = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) fail("mmap of " + path);
  data_ = static_cast<const std::byte*>(mapped);
  std::uint64_t found = 0;
  std::memcpy(&found, data_, sizeof found);
  if (found != nonce) {
    ::munmap(const_cast<std::byte*>(data_), bytes_);
    throw IoError("shared memory: " + path + " is another process's file (its nonce differs)");
  }
}

MappedRegion::~MappedRegion() { ::munmap(const_cast<std::byte*>(data_), bytes_); }

std::span<const std::byte> MappedRegion::range(std::uint64_t offset, std::uint64_t bytes) const {
  if (offset < SharedRegion::kHeaderBytes || offset > bytes_ || bytes > bytes_ - offset)
    throw InvalidArgument("shared memory: bytes " + std::to_string(offset) + " to " +
                          std::to_string(offset + bytes) + " of a region of " + std::to_string(bytes_));
  return {data_ + offset, static_cast<std::size_t>(bytes)};
}

}  // namespace conveyor::service::detail
