#include "data/make_shards/tar_writer.h"

#include <archive.h>
#include <archive_entry.h>

#include <memory>
#include <stdexcept>

namespace conveyor::data {
namespace {

struct EntryDeleter {
  void operator()(archive_entry* entry) const noexcept { archive_entry_free(entry); }
};

}  // namespace

TarWriter::TarWriter(const std::filesystem::path& path) : path_(path), archive_(archive_write_new()) {
  if (archive_ == nullptr) throw std::bad_alloc();
  if (archive_write_set_format_pax_restricted(archive_) != ARCHIVE_OK) fail("cannot set the tar format of");
  if (archive_write_set_bytes_in_last_block(archive_, 1) != ARCHIVE_OK) fail("cannot set the block size of");
  if (archive_write_open_filename(archive_, path_.c_str()) != ARCHIVE_OK) fail("cannot create");
  open_ = true;
}

TarWriter::~TarWriter() {
  if (archive_ != nullptr) archive_write_free(archive_);  // also closes an unfinished archive's file
}

void TarWriter::fail(const char* what) const {
  const char* reason = archive_error_string(archive_);
  throw std::runtime_error(std::string(what) + " " + path_.string() + ": " +
                           (reason ? reason : "unknown error"));
}

void TarWriter::add(const std::string& name, std::span<const std::uint8_t> bytes) {
  std::unique_ptr<archive_entry, EntryDeleter> entry(archive_entry_new());
  archive_entry_set_pathname(entry.get(), name.c_str());
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), 0644);
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(bytes.size()));
  archive_entry_set_mtime(entry.get(), 0, 0);
  archive_entry_set_uid(entry.get(), 0);
  archive_entry_set_gid(entry.get(), 0);
  if (archive_write_header(archive_, entry.get()) != ARCHIVE_OK) fail("cannot write a header to");
  if (!bytes.empty() &&
      archive_write_data(archive_, bytes.data(), bytes.size()) != static_cast<la_ssize_t>(bytes.size()))
    fail("cannot write to");
}

void TarWriter::close() {
  if (!open_) return;
  open_ = false;
  if (archive_write_close(archive_) != ARCHIVE_OK) fail("cannot finish");
}

std::uint64_t TarWriter::member_bytes(const std::string& name, std::size_t bytes) {
  const std::uint64_t pax = name.size() > 100 ? 1024 + (name.size() + 511) / 512 * 512 : 0;
  return pax + 512 + (bytes + 511) / 512 * 512;
}

}  // namespace conveyor::data
