// What a server said when it refused a request: an object store's error document
// (<Error><Code>AccessDenied</Code><Message>Access Denied</Message>...</Error>, S3 and the stores that copy
// its API), read with pugixml.
#pragma once

#include <string>
#include <string_view>

namespace conveyor::detail {

struct StoreError {
  std::string code;     // "NoSuchKey", "SlowDown", ...; empty when the body is not such a document
  std::string message;  // the store's sentence
};

StoreError parse_store_error(std::string_view body);

// "HTTP 403 (InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records.)", or
// "HTTP 404" with the first line of a body that is not an error document.
std::string describe_http_failure(long status, std::string_view body);

}  // namespace conveyor::detail
