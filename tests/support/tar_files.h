// Tar archives for the shard tests, written with libarchive (the library the reader uses), member by
// member as given, so that tests can build well-formed WebDataset shards and every kind of broken one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace conveyor::testing {

struct TarMember {
  std::string name;
  std::vector<std::uint8_t> bytes;
  bool directory = false;
};

// A member holding `text`.
TarMember text_member(std::string name, const std::string& text);

// The archive (POSIX pax format), members in order; gzip: compressed (a .tar.gz).
std::vector<std::uint8_t> tar_bytes(const std::vector<TarMember>& members, bool gzip = false);
// Writes the archive to `path` (creating its folder).
void write_tar(const std::filesystem::path& path, const std::vector<TarMember>& members);

// Samples whose image is the 8 bytes of their number (like numbered_memory's buffers), label number % 10:
// shard s holds `sizes[s]` samples "shard<s>/<number>.jpg" + ".cls", numbered across the shards in order.
// Writes DIR/shard-000000.tar, ... and returns their paths.
std::vector<std::string> write_numbered_shards(const std::filesystem::path& dir,
                                               const std::vector<int>& sizes);

// A wids shard index listing `shards` (names as given) with their sample counts.
std::string shard_index_json(const std::vector<std::string>& shards, const std::vector<int>& sizes);

}  // namespace conveyor::testing
