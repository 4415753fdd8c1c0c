// A local shard file, open: read with pread() calls, or through memory maps one window at a time.
//
// A window's bytes come from the page cache as they are touched, so mapping one reads nothing yet, and a
// reader that hands out views of it copies nothing until the consumer does. Windows rather than the whole
// file: the pages a process has touched in a map count as its own (its RSS) while the map lives, so a map
// held for a whole shard of a gigabyte would show the whole shard; a window goes once no view of it is left.
//
// A mapped file must keep its size while it is mapped: if another process truncates it, touching a page
// past the new end raises SIGBUS, as with every memory map (TarShardOptions::map_local_shards = false reads
// with read() calls instead).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace conveyor::detail {

// "<what> '<path>': <the error's text>", for ShardReadError messages.
std::string describe_failure(const char* what, const std::string& path, int error);

// One mapped window of a file: valid while this object lives.
class MappedWindow {
 public:
  ~MappedWindow();
  MappedWindow(const MappedWindow&) = delete;
  MappedWindow& operator=(const MappedWindow&) = delete;

  std::span<const std::uint8_t> bytes() const noexcept { return {data_, size_}; }

 private:
  friend class ShardFile;
  MappedWindow() = default;

  void* map_ = nullptr;  // the map, from a page boundary at or before the window's first byte
  std::size_t map_size_ = 0;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

class ShardFile {
 public:
  // Opens `path`, a regular file. Throws ShardReadError("io", ...) naming the path when it cannot.
  explicit ShardFile(std::string path);
  ~ShardFile();
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;

  // Reads up to into.size() bytes from `offset`; returns how many (0 at the end). Throws
  // ShardReadError("io", ...) naming the path and offset.
  std::size_t read_at(std::uint64_t offset, std::span<std::uint8_t> into) const;

  // Maps bytes [offset, offset + length) of the file, clipped to its end (empty past it). Throws
  // ShardReadError("io", ...) when the map cannot be made.
  std::shared_ptr<const MappedWindow> map(std::uint64_t offset, std::size_t length) const;

  std::uint64_t size() const noexcept { return size_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace conveyor::detail
