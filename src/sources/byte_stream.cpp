#include "src/sources/byte_stream.h"

namespace conveyor::detail {

bool is_url(const std::string& location) noexcept {
  return location.starts_with("http://") || location.starts_with("https://");
}

std::unique_ptr<ByteStream> open_byte_stream(const std::string& location, const HttpOptions& http,
                                             const Cancellation* cancellation) {
  if (is_url(location)) return open_http_stream(location, http, cancellation);
  return open_file_stream(location);
}

}  // namespace conveyor::detail
