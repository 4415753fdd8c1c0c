// expand_shard_pattern: WebDataset's shard notation ("shard-{000000..000099}.tar", bash's brace
// expansion) and, for local files, glob(3). Brace expansion is hand-written: no Debian C or C++ library
// offers it (glob's GLOB_BRACE knows lists but not numeric ranges, and only for names that exist).
#include <glob.h>

#include <algorithm>
#include <charconv>
#include <memory>

#include "conveyor/error.h"
#include "conveyor/shards.h"
#include "src/sources/byte_stream.h"

namespace conveyor {
namespace {

constexpr std::size_t kMaxNames = 10'000'000;

std::optional<std::uint64_t> number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The alternatives one brace stands for: "a,b,c" or "FROM..TO" (zero-padded when a bound is).
std::vector<std::string> alternatives(const std::string& pattern, std::string_view inside) {
  std::vector<std::string> out;
  if (const std::size_t dots = inside.find(".."); dots != std::string_view::npos) {
    const std::string_view from_text = inside.substr(0, dots), to_text = inside.substr(dots + 2);
    const std::optional<std::uint64_t> from = number(from_text), to = number(to_text);
    if (!from || !to)
      throw InvalidArgument("shard pattern '" + pattern + "': {" + std::string(inside) +
                            "} is not a range of decimal numbers");
    if (*from > *to)
      throw InvalidArgument("shard pattern '" + pattern + "': the range {" + std::string(inside) +
                            "} runs backwards");
    if (*to - *from >= kMaxNames)
      throw InvalidArgument("shard pattern '" + pattern + "': the range {" + std::string(inside) +
                            "} is too long");
    const bool padded =
        (from_text.size() > 1 && from_text[0] == '0') || (to_text.size() > 1 && to_text[0] == '0');
    const std::size_t width = padded ? std::max(from_text.size(), to_text.size()) : 0;
    for (std::uint64_t i = *from; i <= *to; ++i) {
      std::string digits = std::to_string(i);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      out.push_back(std::move(digits));
    }
    return out;
  }
  if (inside.find(',') == std::string_view::npos)
    throw InvalidArgument("shard pattern '" + pattern + "': {" + std::string(inside) +
                          "} is neither a range {A..B} nor a list {a,b}");
  for (std::size_t start = 0;;) {
    const std::size_t comma = inside.find(',', start);
    out.emplace_back(
        inside.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

void expand_braces(const std::string& pattern, const std::string& text, std::vector<std::string>& out) {
  const std::size_t open = text.find('{');
  if (open == std::string::npos) {
    if (text.find('}') != std::string::npos)
      throw InvalidArgument("shard pattern '" + pattern + "': a '}' without its '{'");
    if (out.size() == kMaxNames)
      throw InvalidArgument("shard pattern '" + pattern + "' stands for too many names");
    out.push_back(text);
    return;
  }
  const std::size_t close = text.find('}', open);
  if (close == std::string::npos)
    throw InvalidArgument("shard pattern '" + pattern + "': a '{' without its '}'");
  if (text.find('{', open + 1) < close)
    throw InvalidArgument("shard pattern '" + pattern + "': nested braces");
  if (text.substr(0, open).find('}') != std::string::npos)
    throw InvalidArgument("shard pattern '" + pattern + "': a '}' without its '{'");
  const std::string head = text.substr(0, open), tail = text.substr(close + 1);
  for (const std::string& middle :
       alternatives(pattern, std::string_view(text).substr(open + 1, close - open - 1)))
    expand_braces(pattern, head + middle + tail, out);
}

struct GlobResult {
  glob_t result{};
  ~GlobResult() { globfree(&result); }
};

}  // namespace

std::vector<std::string> expand_shard_pattern(const std::string& pattern) {
  if (pattern.empty()) throw InvalidArgument("shard pattern: empty");
  std::vector<std::string> names;
  expand_braces(pattern, pattern, names);
  if (detail::is_remote(pattern)) return names;
  std::vector<std::string> out;
  for (const std::string& name : names) {
    if (name.find_first_of("*?[") == std::string::npos) {
      out.push_back(name);
      continue;
    }
    GlobResult matches;
    const int status = ::glob(name.c_str(), GLOB_ERR, nullptr, &matches.result);
    if (status == GLOB_NOMATCH)
      throw IoError("shard pattern '" + pattern + "': no file matches '" + name + "'");
    if (status != 0)
      throw IoError("shard pattern '" + pattern + "': cannot list the files for '" + name + "'");
    for (std::size_t i = 0; i < matches.result.gl_pathc; ++i) out.emplace_back(matches.result.gl_pathv[i]);
  }
  return out;
}

}  // namespace conveyor
