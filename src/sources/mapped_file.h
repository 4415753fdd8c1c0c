// A local file mapped read-only into memory, whole. Its bytes come from the page cache as they are
// touched, so mapping a large shard reads nothing yet, and a reader that hands out views of it copies
// nothing until the consumer does.
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

class MappedFile {
 public:
  // Maps `path` (a regular file). Throws ShardReadError("io", ...) naming the path when it cannot.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // The whole file (empty for an empty file); valid while this object lives.
  std::span<const std::uint8_t> bytes() const noexcept { return {data_, size_}; }
  const std::string& path() const noexcept { return path_; }

 private:
  explicit MappedFile(std::string path) : path_(std::move(path)) {}

  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace conveyor::detail
