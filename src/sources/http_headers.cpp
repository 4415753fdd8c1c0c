#include "src/sources/http_headers.h"

#include <cctype>
#include <charconv>

namespace conveyor::detail {
namespace {

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

std::optional<std::uint64_t> parse_number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

std::string_view value_of(std::string_view line) {
  line.remove_prefix(line.find(':') + 1);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
  return line;
}

}  // namespace

void ResponseHeaders::add(std::string_view line) {
  if (starts_with_nocase(line, "HTTP/")) {
    *this = {};
  } else if (starts_with_nocase(line, "Content-Range:")) {
    // "Content-Range: bytes START-END/TOTAL" (TOTAL may be "*")
    const std::size_t space = line.find("bytes ");
    const std::size_t dash = line.find('-', space);
    const std::size_t slash = line.find('/', dash);
    if (space != std::string_view::npos && dash != std::string_view::npos &&
        slash != std::string_view::npos) {
      range_start = parse_number(line.substr(space + 6, dash - space - 6));
      range_total = parse_number(line.substr(slash + 1));
    }
  } else if (starts_with_nocase(line, "Content-Length:")) {
    content_length = parse_number(value_of(line));
  } else if (starts_with_nocase(line, "ETag:")) {
    etag = value_of(line);
  }
}

}  // namespace conveyor::detail
