// libcurl's handles and the options every request of the sources sets, in one place: the HTTP stream, the
// HEAD request that asks an object's size and ETag, and the listing of an S3 prefix all make requests.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <memory>
#include <random>

#include "conveyor/shards.h"
#include "src/sources/remote_request.h"

namespace conveyor::detail {

// curl_global_init, once per process before the first handle (thread-safe static initialisation).
void require_curl();

struct EasyDeleter {
  void operator()(CURL* easy) const noexcept { curl_easy_cleanup(easy); }
};
struct ListDeleter {
  void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
using HeaderList = std::unique_ptr<curl_slist, ListDeleter>;

// The request's URL, headers and signing, and HttpOptions' timeouts, on `easy`. `headers` receives the list
// libcurl reads from: it must outlive the transfers. Throws std::bad_alloc.
void configure_request(CURL* easy, const RemoteRequest& request, const HttpOptions& options,
                       HeaderList& headers);

// The wait before retry number `attempt` (0 for the first): retry_delay doubled per attempt, at most 8 s,
// drawn between half and all of it (jitter).
std::chrono::milliseconds retry_wait(const HttpOptions& options, int attempt, std::minstd_rand& random);

// HTTP statuses worth asking again: 408, 429 and 5xx (an object store's SlowDown is 503).
constexpr bool transient_status(long status) noexcept {
  return status == 408 || status == 429 || status >= 500;
}

}  // namespace conveyor::detail
