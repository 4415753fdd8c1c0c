#include "src/sources/shard_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

#include "conveyor/error.h"
#include "src/sources/file_lock.h"
#include "src/sources/remote_counters.h"
#include "src/sources/shard_read_error.h"

namespace conveyor::detail {
namespace {

namespace fs = std::filesystem;

// The rest of a shard a reader left unread (the tar format's padding after its end) is read into the
// entry when it is at most this much; a reader that stopped earlier leaves no entry.
constexpr std::uint64_t kMaxDrainBytes = std::uint64_t{4} << 20;
// Held by an eviction pass (make_room) throughout, by whichever thread or process runs it.
constexpr const char* kEvictionLock = ".evict.lock";

std::string hex(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

fs::path part_of(const fs::path& entry) { return fs::path(entry.string() + ".part"); }

// A cached shard, read as a file, its bytes counted.
class CachedStream final : public ByteStream {
 public:
  CachedStream(std::unique_ptr<ByteStream> file, std::string location, RemoteCounters& counters)
      : file_(std::move(file)), location_(std::move(location)), counters_(counters) {}
  std::span<const std::uint8_t> read() override {
    const std::span<const std::uint8_t> chunk = file_->read();
    RemoteCounters::add(counters_.bytes_from_cache, chunk.size());
    return chunk;
  }
  std::uint64_t skip(std::uint64_t bytes) override { return file_->skip(bytes); }
  std::uint64_t position() const noexcept override { return file_->position(); }
  const std::string& location() const noexcept override { return location_; }  // the URL, not the file
  std::optional<std::uint64_t> size() const noexcept override { return file_->size(); }

 private:
  std::unique_ptr<ByteStream> file_;
  const std::string location_;
  RemoteCounters& counters_;
};

// The remote stream's bytes, written to "<entry>.part" as they pass; renamed to the entry once the object's
// size has come with its ETag. Holds the part file's lock throughout.
class CachingStream final : public ByteStream {
 public:
  CachingStream(std::unique_ptr<ByteStream> remote, FileLock lock, fs::path entry, ObjectVersion version,
                ShardCache& cache, RemoteCounters& counters)
      : cache_(cache),
        remote_(std::move(remote)),
        lock_(std::move(lock)),
        entry_(std::move(entry)),
        version_(std::move(version)),
        counters_(counters) {}
  ~CachingStream() override {
    // A reader that stopped at the archive's end leaves its padding unread: read it into the entry. The
    // pipeline may be cancelling its readers now (the epoch ended): the drain goes on regardless.
    try {
      if (writing_ && !ended_ && *version_.size - remote_->position() <= kMaxDrainBytes)
        remote_->drain_only();
      while (writing_ && !ended_ && *version_.size - remote_->position() <= kMaxDrainBytes) read();
    } catch (...) {
      // Cancelled, or the server failed: no entry.
    }
    if (writing_) abandon();
  }
  CachingStream(const CachingStream&) = delete;
  CachingStream& operator=(const CachingStream&) = delete;

  std::span<const std::uint8_t> read() override {
    const std::span<const std::uint8_t> chunk = remote_->read();
    if (!writing_) return chunk;
    if (chunk.empty()) {
      ended_ = true;
      finish();
      return chunk;
    }
    std::size_t written = 0;
    while (written < chunk.size()) {
      const ssize_t n = ::write(lock_.fd(), chunk.data() + written, chunk.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // a full disk stops the caching, not the reading
        abandon();
        return chunk;
      }
      written += static_cast<std::size_t>(n);
    }
    return chunk;
  }
  std::uint64_t skip(std::uint64_t) override { return 0; }  // every byte goes into the entry
  std::uint64_t position() const noexcept override { return remote_->position(); }
  const std::string& location() const noexcept override { return remote_->location(); }
  std::optional<std::uint64_t> size() const noexcept override { return remote_->size(); }
  const std::string& etag() const noexcept override { return remote_->etag(); }

 private:
  void finish() {
    // The entry's name promises this size and ETag: anything else (the object replaced meanwhile) is not
    // kept.
    const bool same_etag =
        version_.etag.empty() || remote_->etag().empty() || remote_->etag() == version_.etag;
    if (remote_->position() != *version_.size || !same_etag) return abandon();
    if (::rename(part_of(entry_).c_str(), entry_.c_str()) != 0) return abandon();
    writing_ = false;
    RemoteCounters::add(counters_.cache_misses);
    lock_ = FileLock();
    try {
      cache_.make_room(0);
    } catch (...) {
      // A folder that cannot be listed now: the next fill tries again.
    }
  }
  void abandon() noexcept {
    ::unlink(part_of(entry_).c_str());  // still ours: we hold its lock
    writing_ = false;
    RemoteCounters::add(counters_.uncached);
    lock_ = FileLock();
  }

  ShardCache& cache_;
  std::unique_ptr<ByteStream> remote_;
  FileLock lock_;
  const fs::path entry_;
  const ObjectVersion version_;
  RemoteCounters& counters_;
  bool writing_ = true;
  bool ended_ = false;
};

}  // namespace

ShardCache::ShardCache(fs::path folder, std::uint64_t max_bytes, RemoteCounters& counters)
    : folder_(std::move(folder)), max_bytes_(max_bytes), counters_(counters) {
  std::error_code error;
  fs::create_directories(folder_, error);
  if (error || !fs::is_directory(folder_))
    throw IoError("shard cache: cannot make the folder '" + folder_.string() + "': " + error.message());
}

fs::path ShardCache::entry(const std::string& location, const ObjectVersion& version) const {
  const XXH128_hash_t where = XXH3_128bits(location.data(), location.size());
  const std::string what = version.etag + "|" + std::to_string(version.size.value_or(0));
  return folder_ /
         (hex(where.high64) + hex(where.low64) + "-" + hex(XXH3_64bits(what.data(), what.size())) + ".shard");
}

std::unique_ptr<ByteStream> ShardCache::open_cached(const std::string& location,
                                                    const ObjectVersion& version) {
  const fs::path path = entry(location, version);
  std::unique_ptr<ByteStream> file;
  try {
    file = open_file_stream(path.string());
  } catch (const ShardReadError&) {
    return nullptr;  // not there (or evicted a moment ago)
  }
  if (file->size() != version.size) return nullptr;
  // Recency for eviction: a hit makes the entry the most recently used.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  RemoteCounters::add(counters_.cache_hits);
  return std::make_unique<CachedStream>(std::move(file), location, counters_);
}

std::unique_ptr<ByteStream> ShardCache::fill(const std::string& location, const ObjectVersion& version,
                                             std::unique_ptr<ByteStream> remote) {
  if (!version.size || *version.size > max_bytes_) {
    RemoteCounters::add(counters_.uncached);
    return remote;
  }
  const fs::path path = entry(location, version);
  // A part file made a moment ago can be swept away as a killed filler's (make_room, by another thread or
  // process) between its open and its lock: then it is made again. Its lock held elsewhere is another
  // filler's, or an eviction pass's for the moment it looks at the file: once a pass is over (it holds the
  // folder's lock throughout) the lock is tried again, and one still held is another filler's, left to it.
  FileLock lock;
  for (int attempt = 0; attempt < 3 && !lock.locked(); ++attempt) {
    lock = FileLock(part_of(path), false);
    if (lock.held_elsewhere()) {
      { const FileLock pass_over(folder_ / kEvictionLock, true); }
      lock = FileLock(part_of(path), false);
      if (lock.held_elsewhere()) break;
    }
  }
  if (!lock.locked()) {  // another filler has it: read the store rather than wait
    RemoteCounters::add(counters_.uncached);
    return remote;
  }
  if (std::unique_ptr<ByteStream> cached = open_cached(location, version)) {  // filled meanwhile
    ::unlink(part_of(path).c_str());
    return cached;
  }
  if (::ftruncate(lock.fd(), 0) != 0) {  // a killed filler's bytes
    RemoteCounters::add(counters_.uncached);
    return remote;
  }
  make_room(*version.size);
  return std::make_unique<CachingStream>(std::move(remote), std::move(lock), path, version, *this, counters_);
}

void ShardCache::make_room(std::uint64_t incoming) {
  const FileLock folder_lock(folder_ / kEvictionLock, true);
  struct Entry {
    fs::path path;
    std::uint64_t size;
    fs::file_time_type used;
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  std::error_code error;
  for (const fs::directory_entry& item : fs::directory_iterator(folder_, error)) {
    const fs::path& path = item.path();
    if (path.extension() == ".part") {
      // A part file nobody holds is a killed filler's: delete it (under its lock, so nobody takes it now).
      const FileLock stale(path, false);
      if (stale.locked()) ::unlink(path.c_str());
      continue;
    }
    if (path.extension() != ".shard") continue;
    std::error_code item_error;
    const std::uint64_t size = item.file_size(item_error);
    const fs::file_time_type used = item.last_write_time(item_error);
    if (item_error) continue;  // evicted by another process meanwhile
    entries.push_back({path, size, used});
    total += size;
  }
  if (total + incoming <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& old : entries) {
    if (total + incoming <= max_bytes_) break;
    if (::unlink(old.path.c_str()) == 0) RemoteCounters::add(counters_.evictions);
    total -= old.size;
  }
}

}  // namespace conveyor::detail
