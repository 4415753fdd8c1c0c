// The elements a dataset starts from: file paths, in-memory encoded images or the samples of local tar
// shards located once (shard_members.h), each with a label, or the elements of a SampleSource (a user's, or
// the built-in annotated ones: segmentation folders, COCO), read in any order (random access); or tar
// shards, read front to back (a stream: see shard_set.h and src/pipeline/stream_stage.h). A Source is
// immutable once made and shared by every iterator of the datasets built on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/fields.h"
#include "conveyor/sample.h"
#include "conveyor/source.h"

namespace conveyor::detail {

struct ShardSet;
class ShardMembers;

// Many paths in one allocation: each path is stored NUL-terminated in a single buffer, so an ImageNet-size
// list costs one string, not a million, and open() can use the stored bytes directly.
class PathTable {
 public:
  void add(std::string_view path);
  void reserve(std::size_t paths, std::size_t bytes);
  std::size_t size() const noexcept { return offsets_.size(); }
  std::string_view operator[](std::size_t i) const noexcept;
  const char* c_str(std::size_t i) const noexcept { return blob_.data() + offsets_[i]; }

 private:
  std::string blob_;
  std::vector<std::size_t> offsets_;
};

// What image_folder and list_file found.
struct FileListing {
  PathTable paths;
  std::vector<std::int64_t> labels;
  std::vector<std::string> class_names;  // image_folder only
};

// Walks an ImageFolder tree (see Dataset::image_folder for the rules).
FileListing list_image_folder(const std::filesystem::path& root);
// Parses a "<path> <label>" list file (see Dataset::list_file for the rules).
FileListing parse_list_file(const std::filesystem::path& list, const std::filesystem::path& root);

class Source {
 public:
  static std::shared_ptr<const Source> files(FileListing listing);
  static std::shared_ptr<const Source> memory(std::vector<std::vector<std::uint8_t>> buffers,
                                              std::vector<std::int64_t> labels);
  static std::shared_ptr<const Source> shards(std::shared_ptr<const ShardSet> shards);
  static std::shared_ptr<const Source> shard_members(std::shared_ptr<ShardMembers> members);
  static std::shared_ptr<const Source> custom(std::shared_ptr<const SampleSource> source);

  // Tar shards: elements come with their bytes, in the streams' order; path(), label() and load() are
  // for random-access sources only.
  bool streamed() const noexcept { return shards_ != nullptr; }
  const std::shared_ptr<const ShardSet>& shard_set() const noexcept { return shards_; }

  // A SampleSource's: its path and label come with the element, from its read (the pipeline names the
  // element "<source:i>" until then).
  const std::shared_ptr<const SampleSource>& sample_source() const noexcept { return custom_; }

  // Elements (for tar shards: their total when every shard's count is known, else 0).
  std::size_t size() const noexcept {
    return shards_ ? stream_size_ : custom_ ? custom_size_ : paths_.size();
  }
  // Not for a SampleSource (see sample_source()).
  std::string_view path(std::size_t i) const noexcept { return paths_[i]; }
  std::int64_t label(std::size_t i) const noexcept { return labels_[i]; }
  const std::vector<std::string>& class_names() const noexcept { return class_names_; }
  // The fields its elements carry besides the image and label.
  const FieldSet& fields() const noexcept { return fields_; }

  // Element i's encoded bytes (and its other fields) into `sample`: the pipeline's "read" stage, run in
  // parallel. Files larger than `max_bytes` (0: no limit) are refused (in-memory buffers are the caller's
  // already).
  void load(std::size_t i, Sample& sample, std::size_t max_bytes = 0) const;

 private:
  PathTable paths_;  // "<memory:N>" for in-memory buffers
  std::vector<std::int64_t> labels_;
  std::vector<std::string> class_names_;
  std::vector<std::vector<std::uint8_t>> buffers_;  // empty for file sources
  std::shared_ptr<const ShardSet> shards_;          // tar shards only
  std::shared_ptr<const ShardMembers> members_;     // tar shards read at random only
  std::shared_ptr<const SampleSource> custom_;      // a SampleSource only
  std::size_t stream_size_ = 0, custom_size_ = 0;
  FieldSet fields_;
};

}  // namespace conveyor::detail
