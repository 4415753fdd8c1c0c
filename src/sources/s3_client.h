// s3:// locations as requests to an S3-compatible store: the endpoint and addressing style, the region,
// the credentials (found once, when a data set is made), and how libcurl signs (CURLOPT_AWS_SIGV4).
// Immutable; shared by the streams of a data set.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/shards.h"
#include "src/sources/aws_credentials.h"
#include "src/sources/remote_request.h"

namespace conveyor::detail {

class Cancellation;
struct RemoteCounters;

struct S3Location {
  std::string bucket;
  std::string key;  // may be empty (the bucket) or end with '/' (a prefix)
};

// "s3://bucket/key" -> {bucket, key}. Throws InvalidArgument for a location without a bucket.
S3Location parse_s3_location(const std::string& location);

// One object of a listing.
struct ListedObject {
  std::string key;
  std::uint64_t size = 0;
  std::string etag;
};

class S3Client {
 public:
  // Resolves the options against the environment (S3Options says which variable fills which field).
  // Throws InvalidArgument for credentials that cannot be used (aws_credentials.h) or a bad endpoint.
  S3Client(const S3Options& options, const AwsEnvironment& environment);

  // GET of one object.
  RemoteRequest object(const S3Location& location) const;
  // One page of ListObjectsV2 under `prefix`, after `continuation_token` (empty: the first page), of at
  // most `page_size` keys (0: the store's default, 1,000 on AWS).
  RemoteRequest list_page(const std::string& bucket, const std::string& prefix,
                          const std::string& continuation_token, int page_size = 0) const;
  // Every object under the prefix, in the store's order (by key), following the continuation tokens.
  // Throws ShardReadError naming the s3:// prefix and the store's reason.
  std::vector<ListedObject> list(const std::string& bucket, const std::string& prefix,
                                 const HttpOptions& http, const Cancellation* cancellation,
                                 RemoteCounters* counters, int page_size = 0) const;

  const std::string& endpoint() const noexcept { return endpoint_; }
  const std::string& region() const noexcept { return region_; }
  bool signs() const noexcept { return credentials_.has_value(); }

 private:
  bool virtual_hosted(const std::string& bucket) const;
  std::string base_url(const std::string& bucket) const;  // without the trailing '/'
  RemoteRequest signed_request(std::string url, std::string name) const;

  std::string endpoint_;  // scheme://host[:port], no trailing '/'
  std::string region_;
  bool custom_endpoint_ = false;
  S3Addressing addressing_ = S3Addressing::automatic;
  std::optional<AwsCredentials> credentials_;
};

}  // namespace conveyor::detail
