// probe_object: an object's size and ETag before its bytes are read (the shard cache's check). A GET of
// byte 0 rather than a HEAD: a HEAD's refusal has no body, and the store's Code and Message are what makes
// a 403 clear. The answer is small, so the request runs with curl_easy_perform on the caller's thread.
#include <curl/curl.h>

#include <random>
#include <thread>

#include "src/sources/byte_stream.h"
#include "src/sources/cancellation.h"
#include "src/sources/curl_easy.h"
#include "src/sources/http_headers.h"
#include "src/sources/remote_counters.h"
#include "src/sources/shard_read_error.h"
#include "src/sources/store_error.h"

namespace conveyor::detail {
namespace {

constexpr std::size_t kMaxBody = 16 * 1024;

struct Answer {
  CURL* easy = nullptr;
  ResponseHeaders headers;
  std::string body;
  bool whole = false;  // a 200: the server ignored the Range and sends the whole object

  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* self) {
    auto* answer = static_cast<Answer*>(self);
    const std::size_t bytes = size * count;
    long status = 0;
    curl_easy_getinfo(answer->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status == 200) {  // the headers said what we asked: stop before the object comes
      answer->whole = true;
      return 0;
    }
    answer->body.append(data, std::min(bytes, kMaxBody - std::min(kMaxBody, answer->body.size())));
    return bytes;
  }
  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* self) {
    static_cast<Answer*>(self)->headers.add(std::string_view(data, size * count));
    return size * count;
  }
};

}  // namespace

ObjectVersion probe_object(const RemoteRequest& request, const HttpOptions& http,
                           const Cancellation* cancellation, RemoteCounters* counters) {
  require_curl();
  std::minstd_rand random(std::random_device{}());
  for (int attempt = 0;; ++attempt) {
    EasyHandle easy(curl_easy_init());
    if (!easy) throw ShardReadError("io", "'" + request.name + "': libcurl could not make a handle");
    HeaderList headers;
    configure_request(easy.get(), request, http, headers);
    Answer answer;
    answer.easy = easy.get();
    char error[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(easy.get(), CURLOPT_RANGE, "0-0");
    curl_easy_setopt(easy.get(), CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, &Answer::on_body);
    curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(easy.get(), CURLOPT_HEADERFUNCTION, &Answer::on_header);
    curl_easy_setopt(easy.get(), CURLOPT_HEADERDATA, &answer);
    const CURLcode result = curl_easy_perform(easy.get());
    long status = 0;
    curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &status);
    std::string kind, what;
    bool transient = false;
    if ((result == CURLE_OK || (result == CURLE_WRITE_ERROR && answer.whole)) &&
        (status == 200 || status == 206)) {
      ObjectVersion version;
      version.etag = answer.headers.etag;
      version.size = status == 206 ? answer.headers.range_total : answer.headers.content_length;
      return version;
    }
    if (result == CURLE_OK && status == 416)
      return {0, answer.headers.etag};  // an empty object has no byte 0
    if (result == CURLE_OK) {
      kind = "http_" + std::to_string(status);
      what = describe_http_failure(status, answer.body);
      transient = transient_status(status) || parse_store_error(answer.body).code == "SlowDown";
    } else {
      kind = result == CURLE_OPERATION_TIMEDOUT ? "timeout" : "connection";
      what = error[0] != '\0' ? error : curl_easy_strerror(result);
      transient = result == CURLE_OPERATION_TIMEDOUT || result == CURLE_COULDNT_CONNECT ||
                  result == CURLE_RECV_ERROR || result == CURLE_SEND_ERROR || result == CURLE_GOT_NOTHING ||
                  result == CURLE_PARTIAL_FILE || result == CURLE_COULDNT_RESOLVE_HOST;
    }
    if (!transient || attempt >= http.retries)
      throw ShardReadError(kind, "'" + request.name + "': " + what +
                                     (transient ? " (" + std::to_string(attempt + 1) + " attempts)" : ""));
    if (counters != nullptr) RemoteCounters::add(counters->retries);
    const auto delay = retry_wait(http, attempt, random);
    if (cancellation == nullptr)
      std::this_thread::sleep_for(delay);
    else if (!cancellation->wait_for(delay))
      throw ShardReadError("cancelled", "'" + request.name + "': cancelled");
  }
}

}  // namespace conveyor::detail
