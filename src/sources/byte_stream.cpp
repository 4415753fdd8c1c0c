#include "src/sources/byte_stream.h"

namespace conveyor::detail {

const std::string& ByteStream::etag() const noexcept {
  static const std::string none;
  return none;
}

bool is_url(const std::string& location) noexcept {
  return location.starts_with("http://") || location.starts_with("https://");
}

bool is_s3(const std::string& location) noexcept { return location.starts_with("s3://"); }

}  // namespace conveyor::detail
