// One tar shard written member by member with libarchive (POSIX pax format). Metadata is fixed (mtime 0,
// owner 0, mode 0644), so the same members give the same bytes on any machine.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

struct archive;

namespace conveyor::data {

class TarWriter {
 public:
  // Creates or truncates `path`.
  explicit TarWriter(const std::filesystem::path& path);
  // Without close(), the archive is abandoned (its file is left incomplete).
  ~TarWriter();
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  void add(const std::string& name, std::span<const std::uint8_t> bytes);
  // Writes the end of the archive and closes the file; throws std::runtime_error naming the file.
  void close();

  // The archive's size once a member of `bytes` bytes named `name` is added (a header block, the data
  // rounded up to 512-byte blocks; names over 100 bytes add a pax header) and the archive is closed.
  static std::uint64_t member_bytes(const std::string& name, std::size_t bytes);
  static constexpr std::uint64_t kEndBytes = 1024;  // two zero blocks

 private:
  [[noreturn]] void fail(const char* what) const;

  std::filesystem::path path_;
  archive* archive_ = nullptr;
  bool open_ = false;
};

}  // namespace conveyor::data
