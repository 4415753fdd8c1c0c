// Reading a whole file the way the pipeline's "read" stage does: one open, one fstat, (normally) one
// read into a caller's buffer whose capacity is reused. Public so that code which reads files itself
// (a hand-written loop, a baseline to compare the pipeline with) reads them exactly as the pipeline does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace conveyor {

// Replaces `bytes` with the contents of the regular file at `path`, reusing the vector's capacity (no
// allocation once it has grown to the largest file). Refuses, with IoError naming the path and the
// reason: a file that cannot be opened, stat'ed or read (the system's message), anything that is not a
// regular file (a FIFO fails at once instead of waiting for a writer), and a file larger than
// `max_bytes` (0: no limit), which is refused before any of it is read.
void read_file(const char* path, std::vector<std::uint8_t>& bytes, std::size_t max_bytes = 0);

inline void read_file(const std::filesystem::path& path, std::vector<std::uint8_t>& bytes,
                      std::size_t max_bytes = 0) {
  read_file(path.c_str(), bytes, max_bytes);
}

}  // namespace conveyor
