#include "src/sources/tar_samples.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <exception>

#include "src/sources/shard_read_error.h"

namespace conveyor::detail {
namespace {

constexpr std::size_t kMaxLabelBytes = 64;

void lower_in_place(std::string& text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
}

std::string_view trim_label_text(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

}  // namespace

// libarchive pulls bytes through these; a stream's exception is kept here and rethrown once libarchive has
// returned (an exception must not cross libarchive's C frames).
struct TarSampleReader::Callbacks {
  ByteStream* stream = nullptr;
  std::exception_ptr error;

  static la_ssize_t read(archive* a, void* self_pointer, const void** buffer) {
    auto* self = static_cast<Callbacks*>(self_pointer);
    try {
      const std::span<const std::uint8_t> chunk = self->stream->read();
      *buffer = chunk.data();
      return static_cast<la_ssize_t>(chunk.size());
    } catch (const std::exception& error) {
      self->error = std::current_exception();
      archive_set_error(a, EIO, "%s", error.what());
      return -1;
    }
  }
  static la_int64_t skip(archive*, void* self_pointer, la_int64_t request) {
    auto* self = static_cast<Callbacks*>(self_pointer);
    return request <= 0 ? 0
                        : static_cast<la_int64_t>(self->stream->skip(static_cast<std::uint64_t>(request)));
  }
};

TarSampleReader::TarSampleReader(std::unique_ptr<ByteStream> stream, TarFormat format)
    : stream_(std::move(stream)), format_(std::move(format)), callbacks_(std::make_unique<Callbacks>()) {
  callbacks_->stream = stream_.get();
  archive_.reset(archive_read_new());
  if (!archive_) throw std::bad_alloc();
  archive_read_support_format_tar(archive_.get());
  // WebDataset shards are also found compressed (.tar.gz and friends): libarchive detects the filter.
  archive_read_support_filter_gzip(archive_.get());
  archive_read_support_filter_bzip2(archive_.get());
  archive_read_support_filter_xz(archive_.get());
  archive_read_support_filter_zstd(archive_.get());
  archive_read_set_callback_data(archive_.get(), callbacks_.get());
  archive_read_set_read_callback(archive_.get(), &Callbacks::read);
  archive_read_set_skip_callback(archive_.get(), &Callbacks::skip);
  if (archive_read_open1(archive_.get()) != ARCHIVE_OK) fail("'" + location() + "'");
  opened_ = true;
}

TarSampleReader::~TarSampleReader() = default;

void TarSampleReader::ArchiveDeleter::operator()(archive* a) const noexcept { archive_read_free(a); }

std::string TarSampleReader::where(const Member& member) const {
  return "'" + location() + "': member '" + member.name + "' at byte " + std::to_string(member.offset);
}

void TarSampleReader::set_error(StreamedSample& out, const char* kind, const std::string& reason) const {
  if (!out.error_kind.empty()) return;  // the first broken rule names the sample's error
  out.error_kind = kind;
  out.error_reason = reason;
}

void TarSampleReader::fail(const std::string& context) {
  if (callbacks_->error) {
    const std::exception_ptr error = std::exchange(callbacks_->error, nullptr);
    try {
      std::rethrow_exception(error);
    } catch (const ShardReadError& stream_error) {
      throw ShardReadError(stream_error.kind(), std::string(stream_error.what()) + " (" + context + ")");
    }
  }
  const char* text = archive_error_string(archive_.get());
  const std::string message = text ? text : "unknown libarchive error";
  const std::string at = " (the shard's bytes end at " + std::to_string(stream_->position()) + ")";
  if (!opened_ || message.find("Unrecognized archive format") != std::string::npos)
    throw ShardReadError("not_tar", context + ": not a tar archive: " + message + at);
  if (message.find("Truncated") != std::string::npos)
    throw ShardReadError("truncated", context + ": " + message + at);
  throw ShardReadError("corrupt", context + ": " + message + at);
}

bool TarSampleReader::advance() {
  if (ended_) return false;
  for (;;) {
    archive_entry* entry = nullptr;
    const int status = archive_read_next_header(archive_.get(), &entry);
    if (status == ARCHIVE_EOF) {
      ended_ = true;
      return false;
    }
    if (status != ARCHIVE_OK && status != ARCHIVE_WARN)
      fail(pending_.name.empty() ? "'" + location() + "': the first member's header"
                                 : where(pending_) + ": the header after it");
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    const char* name = archive_entry_pathname(entry);
    if (name == nullptr) continue;
    pending_.name = name;
    const std::size_t slash = pending_.name.rfind('/');
    const std::size_t base = slash == std::string::npos ? 0 : slash + 1;
    const std::size_t dot = pending_.name.find('.', base);
    if (dot == std::string::npos || dot == base) continue;  // no extension, or a hidden file
    pending_.key.assign(pending_.name, 0, dot);
    pending_.extension.assign(pending_.name, dot + 1);
    lower_in_place(pending_.extension);
    pending_.size = archive_entry_size(entry);
    pending_.offset = archive_read_header_position(archive_.get());
    // The format has consumed the member's headers (a pax or GNU long-name header included) and nothing of
    // its data: the first filter's count is where the data starts in the uncompressed archive.
    pending_.data_offset = archive_filter_bytes(archive_.get(), 0);
    has_pending_ = true;
    return true;
  }
}

void TarSampleReader::read_data(const Member& member, std::vector<std::uint8_t>& into) {
  into.resize(static_cast<std::size_t>(member.size));
  std::size_t got = 0;
  while (got < into.size()) {
    const la_ssize_t n = archive_read_data(archive_.get(), into.data() + got, into.size() - got);
    if (n < 0) fail(where(member));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got != into.size()) fail(where(member));
}

void TarSampleReader::skip_data(const Member& member) {
  if (archive_read_data_skip(archive_.get()) != ARCHIVE_OK) fail(where(member));
}

void TarSampleReader::keep_data(const Member& member, StreamedSample& out, std::vector<std::uint8_t>& into,
                                MemberExtent* extent) {
  if (format_.max_member_bytes != 0 && static_cast<std::uint64_t>(member.size) > format_.max_member_bytes) {
    set_error(out, "too_large",
              where(member) + ": " + std::to_string(member.size) + " bytes, over the limit of " +
                  std::to_string(format_.max_member_bytes) + " (PipelineOptions::max_file_bytes)");
    return skip_data(member);
  }
  if (extent != nullptr) {
    *extent = {static_cast<std::uint64_t>(member.data_offset), static_cast<std::uint64_t>(member.size)};
    return skip_data(member);  // a truncated shard fails here, as when the bytes are read
  }
  read_data(member, into);
}

void TarSampleReader::take(const Member& member, StreamedSample* out) {
  const bool image = std::find(format_.image_extensions.begin(), format_.image_extensions.end(),
                               member.extension) != format_.image_extensions.end();
  const bool label = !format_.label_extension.empty() && member.extension == format_.label_extension;
  const bool mask = !format_.mask_extension.empty() && member.extension == format_.mask_extension;
  const bool fields = !format_.fields_extension.empty() && member.extension == format_.fields_extension;
  if (out == nullptr || (!image && !label && !mask && !fields)) {
    has_image_ |= image;
    has_label_ |= label;
    has_mask_ |= mask;
    has_fields_ |= fields;
    return skip_data(member);
  }
  if (mask || fields) {
    // Each extension appears once per sample (group() checks), so these are the sample's only ones.
    (mask ? has_mask_ : has_fields_) = true;
    MemberExtent* extent = nullptr;
    if (located_ != nullptr) extent = mask ? &located_->mask : &located_->fields;
    return keep_data(member, *out, mask ? out->mask_bytes : out->fields_json, extent);
  }
  if (image) {
    if (has_image_) {
      set_error(*out, "duplicate_member", where(member) + ": a second image of sample '" + member.key + "'");
      return skip_data(member);
    }
    has_image_ = true;
    set_path(*out, member.name);
    return keep_data(member, *out, out->bytes, located_ == nullptr ? nullptr : &located_->image);
  }
  if (has_label_) {
    set_error(*out, "duplicate_member", where(member) + ": a second label of sample '" + member.key + "'");
    return skip_data(member);
  }
  has_label_ = true;
  if (member.size > static_cast<std::int64_t>(kMaxLabelBytes)) {
    set_error(*out, "bad_label", where(member) + ": " + std::to_string(member.size) + " bytes is no label");
    return skip_data(member);
  }
  read_data(member, label_text_);
  const std::string_view text = trim_label_text(
      std::string_view(reinterpret_cast<const char*>(label_text_.data()), label_text_.size()));
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    set_error(*out, "bad_label",
              where(member) + ": '" + std::string(text) + "' is not a decimal integer label");
    return;
  }
  out->label = value;
}

bool TarSampleReader::group(StreamedSample* out) {
  if (deferred_) std::rethrow_exception(std::exchange(deferred_, nullptr));
  if (!has_pending_ && !advance()) return false;
  // The sample's strings live in members, so that a warm reader does not allocate for them per sample.
  std::string& key = key_;
  Member& first = first_;
  key = pending_.key;
  first = pending_;
  has_image_ = has_label_ = has_mask_ = has_fields_ = false;
  if (out != nullptr) {
    out->bytes.clear();
    out->mask_bytes.clear();
    out->fields_json.clear();
    out->label = -1;
    set_path(*out, key);
    out->clear_error();
  }
  std::vector<std::string>& extensions = extensions_;  // of this sample's members, to find a repeated one
  extensions.clear();
  for (bool more = true; more;) {
    if (std::find(extensions.begin(), extensions.end(), pending_.extension) != extensions.end()) {
      if (out != nullptr)
        set_error(*out, "duplicate_member",
                  where(pending_) + ": sample '" + key + "' has two '." + pending_.extension + "' members");
      skip_data(pending_);
    } else {
      extensions.push_back(pending_.extension);
      take(pending_, out);
    }
    has_pending_ = false;
    try {
      more = advance() && pending_.key == key;
    } catch (const ShardReadError&) {
      // The shard broke off after this sample's members. A sample that has what it needs is still good:
      // the failure belongs to the next one. One without its label member may have lost it in the break
      // (labels are optional, so nothing else tells): it goes with the break.
      if (!has_image_ || (!format_.label_extension.empty() && !has_label_) ||
          (!format_.mask_extension.empty() && !has_mask_) ||
          (!format_.fields_extension.empty() && !has_fields_))
        throw;
      deferred_ = std::current_exception();
      ended_ = true;
      more = false;
    }
  }
  ++samples_;
  const auto [seen, fresh] = keys_.emplace(key, first.offset);
  if (out == nullptr) return true;
  if (!fresh)
    set_error(*out, "duplicate_key",
              where(first) + ": key '" + key + "' already had a sample at byte " +
                  std::to_string(seen->second) + " (a sample's members must be consecutive)");
  if (!has_image_) {
    std::string members;
    for (const std::string& extension : extensions) members += (members.empty() ? "." : ", .") + extension;
    set_error(*out, "no_image",
              where(first) + ": sample '" + key + "' has no image member (it has " + members + ")");
  }
  if (format_.require_label && !format_.label_extension.empty() && !has_label_)
    set_error(*out, "no_label",
              where(first) + ": sample '" + key + "' has no '." + format_.label_extension + "' label member");
  if (!format_.mask_extension.empty() && !has_mask_)
    set_error(*out, "no_mask",
              where(first) + ": sample '" + key + "' has no '." + format_.mask_extension + "' mask member");
  if (!format_.fields_extension.empty() && !has_fields_)
    set_error(
        *out, "no_fields",
        where(first) + ": sample '" + key + "' has no '." + format_.fields_extension + "' boxes member");
  return true;
}

bool TarSampleReader::next(StreamedSample& out) { return group(&out); }

bool TarSampleReader::locate_next(StreamedSample& out, SampleExtents& extents) {
  extents = {};
  located_ = &extents;
  struct Reset {
    SampleExtents*& pointer;
    ~Reset() { pointer = nullptr; }
  } reset{located_};
  return group(&out);
}

bool TarSampleReader::compressed() const {
  return archive_filter_code(archive_.get(), 0) != ARCHIVE_FILTER_NONE;
}

void TarSampleReader::set_path(StreamedSample& out, const std::string& member) const {
  out.path.assign(location());
  out.path += '#';
  out.path += member;
}

std::uint64_t TarSampleReader::skip(std::uint64_t count) {
  std::uint64_t skipped = 0;
  while (skipped < count && group(nullptr)) ++skipped;
  return skipped;
}

}  // namespace conveyor::detail
