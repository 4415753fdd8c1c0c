// Files replaced all at once: a crash or a kill at any moment leaves either the old content or the new one,
// never a mix or a truncated file. For checkpoints and iterator states that a long run rewrites often.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

namespace conveyor {

// Writes a temporary file beside `target` (same folder, so the rename stays on one file system); commit()
// flushes it to the disk (fsync), renames it over `target` and syncs the folder, so the new name survives a
// power cut too. Destroyed without commit(), it removes the temporary and `target` is untouched.
// Errors throw IoError naming the target and the call that failed.
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();

  const std::filesystem::path& target() const noexcept { return target_; }

 private:
  std::filesystem::path target_, temporary_;
  int fd_ = -1;
};

// AtomicFile in one call.
void write_file_atomically(const std::filesystem::path& target, std::string_view content);

}  // namespace conveyor
