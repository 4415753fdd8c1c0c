// The few response headers the sources read (Content-Range, Content-Length, ETag), one header line at a
// time as libcurl's header callback hands them over. A status line starts a new response (after a redirect
// or a "100 Continue"), and forgets the last one's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace conveyor::detail {

struct ResponseHeaders {
  std::optional<std::uint64_t> range_start, range_total;  // "Content-Range: bytes START-END/TOTAL"
  std::optional<std::uint64_t> content_length;
  std::string etag;  // as sent, quotes included

  void add(std::string_view line);
};

}  // namespace conveyor::detail
