#include <charconv>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/read_file.h"
#include "src/sources/source.h"

namespace conveyor::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace

FileListing parse_list_file(const std::filesystem::path& list, const std::filesystem::path& root) {
  std::vector<std::uint8_t> bytes;
  read_file(list.c_str(), bytes);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::filesystem::path base = root.empty() ? list.parent_path() : root;

  FileListing listing;
  std::size_t line_number = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    ++line_number;
    if (line.empty() || line.front() == '#') continue;

    // The label is the last field, so a path may contain spaces.
    const std::size_t split = line.find_last_of(" \t");
    const std::string_view path =
        split == std::string_view::npos ? std::string_view() : trim(line.substr(0, split));
    const std::string_view label_text = split == std::string_view::npos ? line : line.substr(split + 1);
    std::int64_t label = -1;
    const auto [label_end, parse_error] =
        std::from_chars(label_text.data(), label_text.data() + label_text.size(), label);
    // A NUL byte cannot be part of a file name: the path would name another file than the one listed.
    if (path.empty() || path.find('\0') != std::string_view::npos || parse_error != std::errc() ||
        label_end != label_text.data() + label_text.size() || label < 0) {
      throw InvalidArgument("list_file '" + list.string() + "', line " + std::to_string(line_number) +
                            ": expected '<path> <label>' with a label >= 0, got '" + std::string(line) + "'");
    }
    listing.paths.add((base / std::filesystem::path(path)).string());
    listing.labels.push_back(label);
  }
  return listing;
}

}  // namespace conveyor::detail
