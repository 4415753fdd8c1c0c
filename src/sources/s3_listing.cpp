// S3Client::list: ListObjectsV2, one page (at most 1,000 keys) after another until the store says the
// list is complete, each page's XML read with pugixml.
#include <pugixml.hpp>

#include "src/sources/byte_stream.h"
#include "src/sources/s3_client.h"
#include "src/sources/shard_read_error.h"

namespace conveyor::detail {
namespace {

constexpr std::size_t kMaxPageBytes = std::size_t{16} << 20;  // a page of 1,000 keys is about 300 KB

std::string read_page(const RemoteRequest& request, const HttpOptions& http, const Cancellation* cancellation,
                      RemoteCounters* counters) {
  const std::unique_ptr<ByteStream> stream = open_http_stream(request, http, cancellation, counters);
  std::string text;
  for (std::span<const std::uint8_t> chunk = stream->read(); !chunk.empty(); chunk = stream->read()) {
    if (text.size() + chunk.size() > kMaxPageBytes)
      throw ShardReadError("bad_listing", "'" + request.name + "': a listing page over " +
                                              std::to_string(kMaxPageBytes) + " bytes");
    text.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
  }
  return text;
}

}  // namespace

std::vector<ListedObject> S3Client::list(const std::string& bucket, const std::string& prefix,
                                         const HttpOptions& http, const Cancellation* cancellation,
                                         RemoteCounters* counters, int page_size) const {
  std::vector<ListedObject> objects;
  std::string token;
  for (int page = 0;; ++page) {
    const RemoteRequest request = list_page(bucket, prefix, token, page_size);
    const std::string text = read_page(request, http, cancellation, counters);
    pugi::xml_document document;
    const pugi::xml_parse_result parsed = document.load_buffer(text.data(), text.size());
    const pugi::xml_node result = document.child("ListBucketResult");
    if (!parsed || !result)
      throw ShardReadError("bad_listing", "'" + request.name + "': page " + std::to_string(page) +
                                              " of the listing is not a ListBucketResult document" +
                                              (parsed ? "" : std::string(" (") + parsed.description() + ")"));
    for (const pugi::xml_node entry : result.children("Contents")) {
      ListedObject object;
      object.key = entry.child_value("Key");
      object.size = entry.child("Size").text().as_ullong();
      object.etag = entry.child_value("ETag");
      if (!object.key.empty()) objects.push_back(std::move(object));
    }
    if (!result.child("IsTruncated").text().as_bool()) return objects;
    token = result.child_value("NextContinuationToken");
    if (token.empty())
      throw ShardReadError("bad_listing", "'" + request.name + "': page " + std::to_string(page) +
                                              " says the listing goes on but gives no continuation token");
  }
}

}  // namespace conveyor::detail
