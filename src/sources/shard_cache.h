// The shard cache (ShardCacheOptions): remote shards as files of one folder, shared by the processes of a
// host. An entry is "<XXH3-128 of the location>-<XXH3-64 of its ETag and size>.shard", so a changed object
// is another entry; its size is checked when it is opened, its recency is its modification time (touched
// on every hit).
//
// Filling: the process that takes the lock on "<entry>.part" (flock, without waiting; the lock belongs to
// the file's inode, so it is checked that the name still refers to the locked file) writes the shard there
// as it streams to its reader, and renames it to the entry once every byte of the object's size has come.
// A process killed midway leaves a ".part" file nobody holds: the next filler truncates it, eviction deletes
// it. A process that finds the lock held streams the shard without keeping it, instead of waiting.
//
// Evicting: under a folder-wide lock (".evict.lock"), before a new entry is written and again once it is
// complete, the least recently used entries are deleted until the cache fits under max_bytes. A reader
// holding a deleted entry open reads on (POSIX unlink); files being filled count only once complete, so
// the cap can be passed by the shards being fetched at that moment, until the next of them completes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "src/sources/byte_stream.h"

namespace conveyor::detail {

struct RemoteCounters;

class ShardCache {
 public:
  // Makes the folder when missing. Throws IoError naming it when it cannot be made.
  ShardCache(std::filesystem::path folder, std::uint64_t max_bytes, RemoteCounters& counters);

  // The cached copy of `location` at `version` (size known), or null.
  std::unique_ptr<ByteStream> open_cached(const std::string& location, const ObjectVersion& version);
  // `remote`'s bytes, also written into the cache as they are read (or `remote` itself, uncached, when
  // another process is filling that entry or the shard is over max_bytes). A copy found complete
  // meanwhile is returned instead.
  std::unique_ptr<ByteStream> fill(const std::string& location, const ObjectVersion& version,
                                   std::unique_ptr<ByteStream> remote);

  const std::filesystem::path& folder() const noexcept { return folder_; }
  // Deletes the least recently used entries until `incoming` more bytes fit under max_bytes. Called before
  // an entry is filled and again when it is complete (the shards filled at once may have passed the cap).
  void make_room(std::uint64_t incoming);

 private:
  std::filesystem::path entry(const std::string& location, const ObjectVersion& version) const;

  const std::filesystem::path folder_;
  const std::uint64_t max_bytes_;
  RemoteCounters& counters_;
};

}  // namespace conveyor::detail
