#include "src/sources/curl_easy.h"

#include <algorithm>
#include <new>

#include "conveyor/error.h"

namespace conveyor::detail {
namespace {

// curl_global_init is not safe to race with other threads' libcurl calls: it runs under C++'s thread-safe
// static initialisation, once.
class CurlLibrary {
 public:
  CurlLibrary() {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw IoError("libcurl could not be initialised");
  }
  ~CurlLibrary() { curl_global_cleanup(); }
  CurlLibrary(const CurlLibrary&) = delete;
  CurlLibrary& operator=(const CurlLibrary&) = delete;
};

}  // namespace

void require_curl() { static const CurlLibrary library; }

void configure_request(CURL* easy, const RemoteRequest& request, const HttpOptions& options,
                       HeaderList& headers) {
  for (const std::string& header : request.headers) {
    curl_slist* list = curl_slist_append(headers.get(), header.c_str());
    if (list == nullptr) throw std::bad_alloc();
    headers.release();
    headers.reset(list);
  }
  curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: we run on many threads
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options.low_speed_bytes));
  curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.low_speed_time.count()));
  if (headers) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers.get());
  if (!request.aws_sigv4.empty()) {
    // libcurl signs each request itself (a retry gets a fresh date and signature); it sends the
    // credentials to the URL's host only, not to a host a redirect names.
    curl_easy_setopt(easy, CURLOPT_AWS_SIGV4, request.aws_sigv4.c_str());
    curl_easy_setopt(easy, CURLOPT_USERPWD, request.user_password.c_str());
  }
}

std::chrono::milliseconds retry_wait(const HttpOptions& options, int attempt, std::minstd_rand& random) {
  const int shift = std::clamp(attempt, 0, 10);
  const auto full = std::min(options.retry_delay * (1 << shift), std::chrono::milliseconds(8000));
  std::uniform_int_distribution<long long> draw(full.count() / 2, std::max<long long>(full.count(), 0));
  return std::chrono::milliseconds(draw(random));
}

}  // namespace conveyor::detail
