// A temporary directory that removes itself, for tests that need real files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

namespace conveyor::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Writes bytes to a file, creating parent directories.
void write_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

}  // namespace conveyor::testing
