// One request to a server, as libcurl makes it: where, which headers, and how libcurl signs it. An s3://
// location becomes one (s3_client.h); a plain http(s):// URL is one with the user's headers only.
#pragma once

#include <string>
#include <vector>

namespace conveyor::detail {

struct RemoteRequest {
  std::string url;   // what libcurl fetches
  std::string name;  // what messages call it: the s3:// URL, or the URL itself
  std::vector<std::string> headers;
  // CURLOPT_AWS_SIGV4's parameter ("aws:amz:REGION:s3") and CURLOPT_USERPWD's "KEY:SECRET"; empty: unsigned.
  std::string aws_sigv4;
  std::string user_password;
};

}  // namespace conveyor::detail
