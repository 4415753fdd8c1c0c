#include "src/sources/s3_client.h"

#include <curl/curl.h>

#include <memory>

#include "conveyor/error.h"

namespace conveyor::detail {
namespace {

// SHA-256 of an empty body: what GET requests sign as their payload's hash (x-amz-content-sha256, which
// S3 requires with Signature Version 4 and libcurl 7.88 does not add itself).
constexpr const char* kEmptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct CurlFree {
  void operator()(char* text) const noexcept { curl_free(text); }
};

// RFC 3986 percent-encoding of everything but the unreserved characters (curl_easy_escape), which is S3's
// rule for the canonical request, so the path and query signed are the ones sent.
std::string escape(const std::string& text) {
  const std::unique_ptr<char, CurlFree> escaped(
      curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size())));
  if (!escaped) throw std::bad_alloc();
  return escaped.get();
}

std::string escape_key(const std::string& key) {
  std::string out;
  for (std::size_t start = 0;;) {
    const std::size_t slash = key.find('/', start);
    out += escape(key.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) return out;
    out += '/';
    start = slash + 1;
  }
}

}  // namespace

S3Location parse_s3_location(const std::string& location) {
  if (!location.starts_with("s3://")) throw InvalidArgument("'" + location + "' is not an s3:// URL");
  const std::string rest = location.substr(5);
  const std::size_t slash = rest.find('/');
  S3Location out{rest.substr(0, slash), slash == std::string::npos ? "" : rest.substr(slash + 1)};
  if (out.bucket.empty()) throw InvalidArgument("'" + location + "' names no bucket (s3://bucket/key)");
  return out;
}

S3Client::S3Client(const S3Options& options, const AwsEnvironment& environment) {
  region_ = !options.region.empty()               ? options.region
            : !environment.region.empty()         ? environment.region
            : !environment.default_region.empty() ? environment.default_region
                                                  : "us-east-1";
  endpoint_ = !options.endpoint.empty()          ? options.endpoint
              : !environment.endpoint_s3.empty() ? environment.endpoint_s3
                                                 : environment.endpoint;
  custom_endpoint_ = !endpoint_.empty();
  if (!custom_endpoint_) endpoint_ = "https://s3." + region_ + ".amazonaws.com";
  while (endpoint_.ends_with('/')) endpoint_.pop_back();
  if (!endpoint_.starts_with("http://") && !endpoint_.starts_with("https://"))
    throw InvalidArgument("S3 endpoint '" + endpoint_ + "' is not an http:// or https:// URL");
  if (endpoint_.find('/', endpoint_.find("://") + 3) != std::string::npos)
    throw InvalidArgument("S3 endpoint '" + endpoint_ + "' has a path: give scheme://host[:port]");
  addressing_ = options.addressing;
  if (!options.anonymous) credentials_ = find_aws_credentials(environment, options.profile);
}

bool S3Client::virtual_hosted(const std::string& bucket) const {
  // Virtual-hosted names the bucket in the host: AWS's own endpoint takes it (a bucket with dots would
  // break the TLS certificate's wildcard, so it goes path-style); other stores are served path-style by
  // default, which they all accept and which needs no DNS name per bucket.
  return addressing_ == S3Addressing::virtual_hosted ||
         (addressing_ == S3Addressing::automatic && !custom_endpoint_ &&
          bucket.find('.') == std::string::npos);
}

std::string S3Client::base_url(const std::string& bucket) const {
  if (!virtual_hosted(bucket)) return endpoint_ + "/" + escape(bucket);
  const std::size_t host = endpoint_.find("://") + 3;
  return endpoint_.substr(0, host) + bucket + "." + endpoint_.substr(host);
}

RemoteRequest S3Client::signed_request(std::string url, std::string name) const {
  RemoteRequest request;
  request.url = std::move(url);
  request.name = std::move(name);
  if (credentials_) {
    request.aws_sigv4 = "aws:amz:" + region_ + ":s3";
    request.user_password = credentials_->access_key_id + ":" + credentials_->secret_access_key;
    request.headers.push_back(std::string("x-amz-content-sha256: ") + kEmptyPayloadHash);
    if (!credentials_->session_token.empty())
      request.headers.push_back("x-amz-security-token: " + credentials_->session_token);
  }
  return request;
}

RemoteRequest S3Client::object(const S3Location& location) const {
  return signed_request(base_url(location.bucket) + "/" + escape_key(location.key),
                        "s3://" + location.bucket + "/" + location.key);
}

RemoteRequest S3Client::list_page(const std::string& bucket, const std::string& prefix,
                                  const std::string& continuation_token, int page_size) const {
  // libcurl 7.88 signs the query as it is given: the parameters go in their canonical (sorted) order,
  // each value percent-encoded.
  std::string query;
  if (!continuation_token.empty()) query += "continuation-token=" + escape(continuation_token) + "&";
  query += "list-type=2&";
  if (page_size > 0) query += "max-keys=" + std::to_string(page_size) + "&";
  query += "prefix=" + escape(prefix);
  return signed_request(base_url(bucket) + (virtual_hosted(bucket) ? "/?" : "?") + query,
                        "s3://" + bucket + "/" + prefix);
}

}  // namespace conveyor::detail
