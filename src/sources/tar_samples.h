// WebDataset samples from one tar shard, read through libarchive from a ByteStream (file or HTTP).
//
// A sample is a run of consecutive members with the same key: the member's name up to the first dot of
// its last path component ("train/n01/img_7.jpg" and "train/n01/img_7.cls" are the sample
// "train/n01/img_7"); what follows the dot is the member's extension. Directories, links and members whose
// last component has no dot or starts with one are not part of any sample. Of a sample's members, the one
// with an image extension is its bytes and the one with the label extension holds its label as decimal
// text; when asked for, the one with the mask extension ("mask.png") is its mask and the one with the fields
// extension ("json") its boxes, classes and tags (fields_json.h); others are passed over.
//
// Rules, each checked per sample (the sample then carries the error and the reader goes on):
//   no_image          no member with an image extension (a stray README, a label without its image)
//   no_label          no member with the label extension (when TarFormat::require_label; otherwise a sample
//                     without one has label -1, as a segmentation or detection sample has)
//   no_mask           no member with the mask extension (when masks are asked for)
//   no_fields         no member with the fields extension (when boxes are asked for)
//   bad_label         the label member is not a decimal integer
//   duplicate_member  two members of one sample with the same extension, or two images
//   duplicate_key     the key appeared in an earlier sample of the shard (members not kept together)
//   too_large         the image member is over the size limit (its bytes are skipped, not read)
// The shard cannot go on (ShardReadError is thrown) when its bytes end inside a member ("truncated"), are
// not a tar archive ("not_tar"), or the stream fails (its own kind, e.g. "http_404", "timeout").
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "conveyor/fields.h"
#include "src/sources/byte_stream.h"
#include "src/sources/streamed_sample.h"

struct archive;
struct archive_entry;

namespace conveyor::detail {

// Where a member's data lies in an uncompressed archive.
struct MemberExtent {
  std::uint64_t offset = 0;  // of its first byte
  std::uint64_t size = 0;
};

// Where a sample's members lie (size 0: it has none of that kind).
struct SampleExtents {
  MemberExtent image, mask, fields;
};

// What a shard's samples look like.
struct TarFormat {
  std::vector<std::string> image_extensions{"jpg", "jpeg"};  // lower case
  std::string label_extension = "cls";                       // lower case; empty: no labels
  std::size_t max_member_bytes = 0;   // image, mask and boxes members over this are refused; 0: none
  std::string mask_extension = {};    // lower case; empty: no masks
  std::string fields_extension = {};  // lower case; empty: no boxes
  bool require_label = false;  // a sample without the label member fails ("no_label"); else its label is -1

  FieldSet fields() const noexcept { return {!mask_extension.empty(), !fields_extension.empty(), false}; }
};

class TarSampleReader {
 public:
  TarSampleReader(std::unique_ptr<ByteStream> stream, TarFormat format);
  ~TarSampleReader();
  TarSampleReader(const TarSampleReader&) = delete;
  TarSampleReader& operator=(const TarSampleReader&) = delete;

  // The next sample into `out` (bytes, label, path "<shard>#<image member>", or an error as listed above);
  // false at the end of the shard. Throws ShardReadError when the shard cannot go on.
  bool next(StreamedSample& out);
  // Like next(), but the members' bytes are passed over, not read: `extents` gets where they lie in the
  // archive (out's byte vectors stay empty). Byte offsets of the file only when the shard is not compressed.
  bool locate_next(StreamedSample& out, SampleExtents& extents);
  // The shard's bytes go through a decompression filter (gzip, ...).
  bool compressed() const;
  // Passes over up to `count` samples, reading headers only (a file stream seeks over the data); returns
  // how many there were. Throws like next().
  std::uint64_t skip(std::uint64_t count);

  // True when no further sample follows (reads the next member's header when needed).
  bool at_end() { return !has_pending_ && !advance(); }
  // Samples read or passed over so far.
  std::uint64_t samples() const noexcept { return samples_; }
  const std::string& location() const noexcept { return stream_->location(); }

 private:
  struct Member {
    std::string name, key, extension;
    std::int64_t size = 0;
    std::int64_t offset = 0;       // of its header in the (uncompressed) archive
    std::int64_t data_offset = 0;  // of its data
  };
  struct Callbacks;

  bool advance();  // the next member that belongs to a sample, into pending_; false at the end
  bool group(StreamedSample* out);  // one sample (out == nullptr: pass over it)
  void take(const Member& member, StreamedSample* out);
  void read_data(const Member& member, std::vector<std::uint8_t>& into);
  void skip_data(const Member& member);
  // A member whose bytes the sample keeps (image, mask, fields): over the size limit, the sample's error
  // ("too_large", its bytes skipped); when samples are located, where its bytes lie (extent); else its bytes.
  void keep_data(const Member& member, StreamedSample& out, std::vector<std::uint8_t>& into,
                 MemberExtent* extent);
  [[noreturn]] void fail(const std::string& context);
  std::string where(const Member& member) const;
  void set_error(StreamedSample& out, const char* kind, const std::string& reason) const;
  void set_path(StreamedSample& out, const std::string& member) const;  // "<shard>#<member>"

  std::unique_ptr<ByteStream> stream_;
  const TarFormat format_;
  std::unique_ptr<Callbacks> callbacks_;
  struct ArchiveDeleter {
    void operator()(archive* a) const noexcept;
  };
  std::unique_ptr<archive, ArchiveDeleter> archive_;  // freed also when the constructor throws
  bool opened_ = false;

  Member pending_;
  bool has_pending_ = false;
  bool ended_ = false;
  std::exception_ptr deferred_;  // a failure met while finishing a complete sample: the next call's
  std::uint64_t samples_ = 0;
  SampleExtents* located_ = nullptr;  // locate_next's: the extents go here instead of the bytes
  std::unordered_map<std::string, std::int64_t> keys_;  // key -> header offset of its first member

  // The sample being grouped.
  std::string key_;
  Member first_;
  std::vector<std::string> extensions_;
  bool has_image_ = false, has_label_ = false, has_mask_ = false, has_fields_ = false;
  std::vector<std::uint8_t> label_text_;
};

}  // namespace conveyor::detail
