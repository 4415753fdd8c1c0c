// Local, uncompressed tar shards read at random (TarShardOptions::random_access), as wids and DALI's
// webdataset reader do with an index: every sample's image member is located once, headers only (and each
// label member's few bytes), and from then on each sample is read with one pread() from its shard, in the
// pipeline's parallel read stage, like a loose file. The samples form a table (path, label), so the
// dataset orders, shuffles and splits them as it does files; no reader threads, no read-ahead.
//
// A sample that breaks the format keeps its error (the same kinds as the stream's: no_label, bad_label,
// duplicate_key, ...) and raises it when read. A shard that cannot be read to its end (missing,
// unreadable, not a tar archive, truncated) keeps the whole samples before the break, and one element
// that fails with the break's kind and message: bad files never stop the dataset from being made.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/sources/file_descriptor.h"
#include "src/sources/shard_set.h"
#include "src/sources/source.h"

namespace conveyor::detail {

class ShardMembers {
 public:
  // Locates the samples of every shard of `set`, one shard per task. Throws InvalidArgument when a shard
  // is a URL or compressed (its members have no byte offsets in the file).
  explicit ShardMembers(const ShardSet& set);
  ~ShardMembers();
  ShardMembers(const ShardMembers&) = delete;
  ShardMembers& operator=(const ShardMembers&) = delete;

  // The samples, shard after shard, each shard's in stored order: "<shard>#<image member>" and labels.
  // Moved out once, into the Source's tables.
  FileListing take_listing() { return std::move(listing_); }

  // Sample i's image bytes into sample.encoded, and its mask and boxes when the format has them. Throws
  // ShardReadError: the sample's own error, "too_large" for a member over max_bytes (0: no limit), "io",
  // "bad_fields".
  void read(std::size_t i, Sample& sample, std::size_t max_bytes) const;
  FieldSet fields() const noexcept { return format_.fields(); }

 private:
  struct Member {
    std::uint32_t shard = 0;
    SampleExtents extents;
  };
  struct Failure {
    std::string kind, reason;
  };
  struct ShardIndex;  // one shard's samples, as its task found them

  // One member's bytes (`what`: "image", "mask", ...) from the shard open as fd.
  void read_member(int fd, const std::string& location, MemberExtent extent, const char* what,
                   std::vector<std::uint8_t>& bytes, std::size_t max_bytes) const;

  TarFormat format_;
  std::vector<std::string> locations_;  // the shards' paths
  // The shards, open while the set is small enough to keep them open (see the constructor); else each
  // read opens its shard.
  std::vector<FileDescriptor> open_;
  std::vector<Member> members_;
  std::unordered_map<std::size_t, Failure> failures_;  // sample -> why it cannot be read
  FileListing listing_;
};

}  // namespace conveyor::detail
