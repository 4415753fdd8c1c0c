// Batches between a worker and a trainer of the same host through shared memory instead of the socket.
//
// Over loopback TCP every batch is copied into the kernel by the worker and out of it by the trainer: for
// 224 x 224 crops, 150 KB an image, which cost a worker about a sixth of its CPU per image (issue 40's
// transport measurements). So a worker offers each trainer's stream a region of its own: an anonymous memory
// file (memfd), sealed against shrinking, that the worker's split pipelines assemble their batches in. The
// trainer opens it through /proc/PID/fd/N (which succeeds only on the same host, in the same PID namespace,
// under a user allowed to see the worker's files), maps it read-only and checks the random nonce the worker
// wrote at its start. From then on a batch whose tensors all lie in the region travels as their offsets; the
// trainer copies them out into its own buffers and releases the batch, and only then may the worker reuse
// the memory. Anything else (another host, a region the trainer cannot open, a batch outside the region)
// travels over the socket as before.
//
// The memfd needs no name in a file system: nothing is left behind when either process is killed, and a
// container's small /dev/shm is not involved (its pages count, as any memory, to the worker's cgroup).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "conveyor/host_memory.h"

namespace conveyor::service::detail {

// The worker's side: a sealed memfd of `bytes`, mapped read-write, whose first page holds the nonce.
class SharedRegion {
 public:
  // Throws IoError when the host cannot make one (no memfd, no memory).
  explicit SharedRegion(std::size_t bytes);
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  // Where a process of this host opens it: "/proc/PID/fd/N".
  const std::string& path() const noexcept { return path_; }
  std::uint64_t nonce() const noexcept { return nonce_; }
  std::size_t bytes() const noexcept { return bytes_; }
  std::byte* data() const noexcept { return data_; }

  // The first offset batches may use: the nonce's page comes before.
  static constexpr std::size_t kHeaderBytes = 4096;

 private:
  int fd_ = -1;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::uint64_t nonce_ = 0;
  std::string path_;
};

// Host memory for the pipelines of one stream: blocks of the region (first fit, so that the pages in use stay
// few and low), or of `fallback` once the region is full. Blocks are page-aligned.
class SharedRegionMemory final : public HostMemoryResource {
 public:
  SharedRegionMemory(std::shared_ptr<SharedRegion> region, std::shared_ptr<HostMemoryResource> fallback);

  void* allocate(std::size_t bytes) override;
  void deallocate(void* memory, std::size_t bytes) noexcept override;
  bool page_locked() const noexcept override { return false; }

  // The offset of [memory, memory + bytes) in the region, or nullopt when it is not all in it.
  std::optional<std::uint64_t> offset_of(const void* memory, std::size_t bytes) const noexcept;
  const SharedRegion& region() const noexcept { return *region_; }
  // Bytes of the region handed out now.
  std::size_t used_bytes() const;

 private:
  const std::shared_ptr<SharedRegion> region_;
  const std::shared_ptr<HostMemoryResource> fallback_;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::size_t> free_;  // offset -> bytes, neighbours merged
  std::size_t used_ = 0;
};

// The trainer's side: a worker's region, mapped read-only.
class MappedRegion {
 public:
  // Opens and maps the region a worker offered. Throws IoError saying why it cannot (another host or PID
  // namespace, no permission, not sealed, another size or nonce, a path that is not a /proc/PID/fd/N).
  MappedRegion(const std::string& path, std::uint64_t nonce, std::size_t bytes);
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  // The bytes at [offset, offset + bytes) of the region; throws InvalidArgument when that is outside it.
  std::span<const std::byte> range(std::uint64_t offset, std::uint64_t bytes) const;
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace conveyor::service::detail
