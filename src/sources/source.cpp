#include "src/sources/source.h"

#include <string>

#include "conveyor/error.h"
#include "conveyor/read_file.h"
#include "src/sources/shard_members.h"
#include "src/sources/shard_set.h"

namespace conveyor::detail {

void PathTable::add(std::string_view path) {
  offsets_.push_back(blob_.size());
  blob_.append(path);
  blob_.push_back('\0');
}

void PathTable::reserve(std::size_t paths, std::size_t bytes) {
  offsets_.reserve(paths);
  blob_.reserve(bytes);
}

std::string_view PathTable::operator[](std::size_t i) const noexcept {
  const std::size_t end = i + 1 < offsets_.size() ? offsets_[i + 1] : blob_.size();
  return std::string_view(blob_.data() + offsets_[i], end - offsets_[i] - 1);
}

std::shared_ptr<const Source> Source::files(FileListing listing) {
  auto source = std::make_shared<Source>();
  source->paths_ = std::move(listing.paths);
  source->labels_ = std::move(listing.labels);
  source->class_names_ = std::move(listing.class_names);
  return source;
}

std::shared_ptr<const Source> Source::memory(std::vector<std::vector<std::uint8_t>> buffers,
                                             std::vector<std::int64_t> labels) {
  auto source = std::make_shared<Source>();
  for (std::size_t i = 0; i < buffers.size(); ++i) source->paths_.add("<memory:" + std::to_string(i) + ">");
  source->labels_ = std::move(labels);
  source->buffers_ = std::move(buffers);
  return source;
}

std::shared_ptr<const Source> Source::shards(std::shared_ptr<const ShardSet> shards) {
  auto source = std::make_shared<Source>();
  source->stream_size_ = static_cast<std::size_t>(shards->total());
  source->fields_ = shards->format.fields();
  source->shards_ = std::move(shards);
  return source;
}

std::shared_ptr<const Source> Source::shard_members(std::shared_ptr<ShardMembers> members) {
  auto source = std::make_shared<Source>();
  FileListing listing = members->take_listing();
  source->paths_ = std::move(listing.paths);
  source->labels_ = std::move(listing.labels);
  source->fields_ = members->fields();
  source->members_ = std::move(members);
  return source;
}

std::shared_ptr<const Source> Source::custom(std::shared_ptr<const SampleSource> custom) {
  if (!custom) throw InvalidArgument("Dataset::from_source: no source");
  auto source = std::make_shared<Source>();
  source->custom_size_ = custom->size();
  source->class_names_ = custom->class_names();
  source->fields_ = custom->fields();
  source->custom_ = std::move(custom);
  return source;
}

void Source::load(std::size_t i, Sample& sample, std::size_t max_bytes) const {
  if (custom_) {
    custom_->read(i, sample, ReadLimits{max_bytes});
  } else if (members_) {
    members_->read(i, sample, max_bytes);
  } else if (buffers_.empty()) {
    read_file(paths_.c_str(i), sample.encoded, max_bytes);
  } else {
    sample.encoded.assign(buffers_[i].begin(), buffers_[i].end());
  }
}

}  // namespace conveyor::detail
