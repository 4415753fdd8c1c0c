#include "src/sources/shard_members.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <system_error>

#include "conveyor/error.h"
#include "src/core/marked_parallel_for.h"
#include "src/sources/byte_stream.h"
#include "src/sources/fields_json.h"
#include "src/sources/shard_read_error.h"
#include "src/sources/tar_samples.h"

namespace conveyor::detail {
namespace {

// Shards kept open at most: a quarter of the process's descriptor limit, so that the pipeline's own files
// and the user's still fit. A larger set opens its shard on every read, as loose files are opened.
std::size_t open_shards_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1024;
  return static_cast<std::size_t>(limit.rlim_cur / 4);
}

}  // namespace

struct ShardMembers::ShardIndex {
  std::vector<Member> members;
  std::vector<std::string> paths;
  std::vector<std::int64_t> labels;
  std::vector<std::pair<std::size_t, Failure>> failures;  // by place in this shard
  std::exception_ptr refused;                             // the shard cannot be read at random at all

  void add(std::uint32_t shard, SampleExtents extents, std::string path, std::int64_t label) {
    members.push_back({shard, extents});
    paths.push_back(std::move(path));
    labels.push_back(label);
  }
  void fail_last(std::string kind, std::string reason) {
    failures.emplace_back(members.size() - 1, Failure{std::move(kind), std::move(reason)});
  }
};

ShardMembers::ShardMembers(const ShardSet& set) : format_(set.format) {
  for (const ShardInfo& shard : set.shards) {
    if (is_remote(shard.location))
      throw InvalidArgument("Dataset::tar_shards: random_access reads local files, and '" + shard.location +
                            "' is a URL (stream it: random_access = false)");
    locations_.push_back(shard.location);
  }
  std::vector<ShardIndex> shards(locations_.size());
  const auto index_shard = [&](std::size_t s) {
    ShardIndex& index = shards[s];
    const auto shard = static_cast<std::uint32_t>(s);
    StreamedSample sample;
    SampleExtents extents;
    try {
      TarSampleReader reader(open_file_stream(locations_[s]), set.format);
      if (reader.compressed())
        throw InvalidArgument("Dataset::tar_shards: random_access needs uncompressed shards, and '" +
                              locations_[s] + "' is compressed (stream it: random_access = false)");
      while (reader.locate_next(sample, extents)) {
        index.add(shard, extents, sample.path, sample.label);
        if (!sample.error_kind.empty()) index.fail_last(sample.error_kind, sample.error_reason);
      }
    } catch (const ShardReadError& error) {
      // The shard broke off (or never began): what came before stays, and one element says why.
      index.add(shard, {}, locations_[s], -1);
      index.fail_last(error.kind(), error.what());
    } catch (...) {
      index.refused = std::current_exception();  // thrown below, the first shard's first
    }
  };
  detail::marked_parallel_for(locations_.size(), 1, [&](std::size_t first, std::size_t last) {
    for (std::size_t s = first; s != last; ++s) index_shard(s);
  });
  for (const ShardIndex& index : shards)
    if (index.refused) std::rethrow_exception(index.refused);

  std::size_t total = 0, bytes = 0;
  for (const ShardIndex& index : shards) {
    total += index.members.size();
    for (const std::string& path : index.paths) bytes += path.size() + 1;
  }
  members_.reserve(total);
  listing_.paths.reserve(total, bytes);
  listing_.labels.reserve(total);
  for (ShardIndex& index : shards) {
    for (const auto& [place, why] : index.failures) failures_.emplace(members_.size() + place, why);
    for (std::size_t i = 0; i < index.members.size(); ++i) {
      members_.push_back(index.members[i]);
      listing_.paths.add(index.paths[i]);
      listing_.labels.push_back(index.labels[i]);
    }
  }

  if (locations_.size() <= open_shards_limit()) {
    open_.reserve(locations_.size());
    // A shard that does not open now is opened again by each read of it, which then reports why.
    for (const std::string& location : locations_)
      open_.emplace_back(::open(location.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  }
}

ShardMembers::~ShardMembers() = default;

void ShardMembers::read_member(int fd, const std::string& location, MemberExtent extent, const char* what,
                               std::vector<std::uint8_t>& bytes, std::size_t max_bytes) const {
  const auto where = [&] {
    return "'" + location + "': the " + what + " at byte " + std::to_string(extent.offset);
  };
  if (max_bytes != 0 && extent.size > max_bytes)
    throw ShardReadError("too_large", where() + ": " + std::to_string(extent.size) +
                                          " bytes, over the limit of " + std::to_string(max_bytes) +
                                          " (PipelineOptions::max_file_bytes)");
  bytes.resize(static_cast<std::size_t>(extent.size));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n =
        ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(extent.offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ShardReadError("io", io_failure("cannot read", location, errno) + " at byte " +
                                     std::to_string(extent.offset + got));
    }
    if (n == 0)  // the shard was cut after it was indexed
      throw ShardReadError("truncated", where() + ": the shard ends " + std::to_string(got) +
                                            " bytes into its " + std::to_string(bytes.size()));
    got += static_cast<std::size_t>(n);
  }
}

void ShardMembers::read(std::size_t i, Sample& sample, std::size_t max_bytes) const {
  if (const auto failed = failures_.find(i); failed != failures_.end())
    throw ShardReadError(failed->second.kind, failed->second.reason);
  const Member& member = members_[i];
  const std::string& location = locations_[member.shard];
  FileDescriptor opened;
  int fd = open_.empty() ? -1 : open_[member.shard].get();
  if (fd < 0) {
    opened = FileDescriptor(::open(location.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (opened.get() < 0) throw ShardReadError("io", io_failure("cannot open", location, errno));
    fd = opened.get();
  }
  read_member(fd, location, member.extents.image, "image", sample.encoded, max_bytes);
  if (!format_.mask_extension.empty())
    read_member(fd, location, member.extents.mask, "mask", sample.encoded_mask, max_bytes);
  if (!format_.fields_extension.empty()) {
    // One buffer per thread for the JSON text: its capacity stays from one sample to the next.
    thread_local std::vector<std::uint8_t> text;
    read_member(fd, location, member.extents.fields, "boxes", text, max_bytes);
    try {
      parse_fields_json(text, sample);
    } catch (const ShardReadError& error) {
      throw ShardReadError(error.kind(), "'" + location + "': the boxes at byte " +
                                             std::to_string(member.extents.fields.offset) + ": " +
                                             error.what());
    }
  }
}

}  // namespace conveyor::detail
