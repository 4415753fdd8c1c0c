#include "support/tar_files.h"

#include <archive.h>
#include <archive_entry.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "support/temp_dir.h"

namespace conveyor::testing {
namespace {

struct WriterDeleter {
  void operator()(archive* a) const noexcept { archive_write_free(a); }
};
struct EntryDeleter {
  void operator()(archive_entry* e) const noexcept { archive_entry_free(e); }
};

std::string shard_name(std::size_t s) {
  char name[32];
  std::snprintf(name, sizeof name, "shard-%06zu.tar", s);
  return name;
}

}  // namespace

TarMember text_member(std::string name, const std::string& text) {
  return TarMember{std::move(name), std::vector<std::uint8_t>(text.begin(), text.end())};
}

std::vector<std::uint8_t> tar_bytes(const std::vector<TarMember>& members, bool gzip) {
  std::unique_ptr<archive, WriterDeleter> writer(archive_write_new());
  std::vector<std::uint8_t> out;
  const auto check = [&](int status, const char* what) {
    if (status != ARCHIVE_OK)
      throw std::runtime_error(std::string("tar_bytes: ") + what + ": " + archive_error_string(writer.get()));
  };
  check(archive_write_set_format_pax_restricted(writer.get()), "format");
  check(archive_write_set_bytes_in_last_block(writer.get(), 1), "block");
  if (gzip) check(archive_write_add_filter_gzip(writer.get()), "gzip");
  // Written through a callback into a growing vector (archive_write_open_memory needs a fixed buffer).
  const auto write = [](archive*, void* data, const void* buffer, std::size_t length) -> la_ssize_t {
    auto* bytes = static_cast<std::vector<std::uint8_t>*>(data);
    const auto* begin = static_cast<const std::uint8_t*>(buffer);
    bytes->insert(bytes->end(), begin, begin + length);
    return static_cast<la_ssize_t>(length);
  };
  check(archive_write_open2(writer.get(), &out, nullptr, write, nullptr, nullptr), "open");
  for (const TarMember& member : members) {
    std::unique_ptr<archive_entry, EntryDeleter> entry(archive_entry_new());
    archive_entry_set_pathname(entry.get(), member.name.c_str());
    archive_entry_set_filetype(entry.get(), member.directory ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(entry.get(), member.directory ? 0755 : 0644);
    archive_entry_set_size(entry.get(), member.directory ? 0 : static_cast<la_int64_t>(member.bytes.size()));
    archive_entry_set_mtime(entry.get(), 0, 0);
    check(archive_write_header(writer.get(), entry.get()), "header");
    if (!member.directory && !member.bytes.empty() &&
        archive_write_data(writer.get(), member.bytes.data(), member.bytes.size()) !=
            static_cast<la_ssize_t>(member.bytes.size()))
      throw std::runtime_error("tar_bytes: data: " + std::string(archive_error_string(writer.get())));
  }
  check(archive_write_close(writer.get()), "close");
  return out;
}

void write_tar(const std::filesystem::path& path, const std::vector<TarMember>& members) {
  write_file(path, tar_bytes(members));
}

std::vector<std::string> write_numbered_shards(const std::filesystem::path& dir,
                                               const std::vector<int>& sizes) {
  std::vector<std::string> paths;
  std::uint64_t number = 0;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    std::vector<TarMember> members;
    for (int i = 0; i < sizes[s]; ++i, ++number) {
      const std::string key = "shard" + std::to_string(s) + "/" + std::to_string(number);
      std::vector<std::uint8_t> bytes(sizeof number);
      std::memcpy(bytes.data(), &number, sizeof number);
      members.push_back({key + ".jpg", std::move(bytes)});
      members.push_back(text_member(key + ".cls", std::to_string(number % 10) + "\n"));
    }
    const std::filesystem::path path = dir / shard_name(s);
    write_tar(path, members);
    paths.push_back(path.string());
  }
  return paths;
}

std::string shard_index_json(const std::vector<std::string>& shards, const std::vector<int>& sizes) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t s = 0; s < shards.size(); ++s)
    list.push_back({{"url", shards[s]}, {"nsamples", sizes[s]}});
  return nlohmann::json{{"__kind__", "wids-shard-index-v1"}, {"wids_version", 1}, {"shardlist", list}}.dump(
      2);
}

}  // namespace conveyor::testing
