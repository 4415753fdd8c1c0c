// ByteStream over HTTP(S) through libcurl. libcurl pushes bytes into a write callback while libarchive
// pulls them through its read callback; the multi interface joins the two on one thread: read() drives the
// transfer (curl_multi_perform, curl_multi_poll) until the callback has put bytes into the chunk that read()
// hands out. So a shard reader needs no second thread per transfer, and the bytes in memory are one chunk.
//
// Failures: a transfer that fails (connection refused or dropped, a timeout, a response shorter than its
// Content-Length, HTTP 408/429/5xx) is made again after a back-off with jitter, from the first byte not yet
// delivered: with "Range: bytes=N-" when bytes were delivered (206 continues there; a 200 sends everything
// again and the first N bytes are passed over). HttpOptions::retries bounds the attempts that deliver no
// new byte, so a server that keeps failing at the same place ends in an error naming the URL and the byte
// offset. Other answers (403, 404, ...) fail at once; their body, an object store's error document, is kept
// (16 KB at most) for the message. A response whose ETag differs from the first one's is another version
// of the object: the stream fails rather than join two versions' bytes.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <random>
#include <vector>

#include "src/sources/byte_stream.h"
#include "src/sources/cancellation.h"
#include "src/sources/curl_easy.h"
#include "src/sources/http_headers.h"
#include "src/sources/remote_counters.h"
#include "src/sources/shard_read_error.h"
#include "src/sources/store_error.h"

namespace conveyor::detail {
namespace {

constexpr std::size_t kMaxErrorBody = 16 * 1024;
// One curl_multi_perform may read a hundred buffers from a fast socket; past this much in the chunk the
// transfer pauses until the reader has taken it, so the stream holds at most about this much.
constexpr std::size_t kMaxChunk = std::size_t{1} << 20;

struct MultiDeleter {
  void operator()(CURLM* multi) const noexcept { curl_multi_cleanup(multi); }
};

class HttpStream final : public ByteStream {
 public:
  HttpStream(RemoteRequest request, const HttpOptions& options, const Cancellation* cancellation,
             RemoteCounters* counters)
      : request_(std::move(request)),
        options_(options),
        cancellation_(cancellation),
        counters_(counters),
        random_(std::random_device{}()) {
    require_curl();
    easy_.reset(curl_easy_init());
    multi_.reset(curl_multi_init());
    if (!easy_ || !multi_)
      throw ShardReadError("io", "'" + request_.name + "': libcurl could not make a handle");
    configure_request(easy_.get(), request_, options_, headers_);
    CURL* easy = easy_.get();
    curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer_);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &HttpStream::on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &HttpStream::on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, this);
  }
  ~HttpStream() override {
    if (running_) curl_multi_remove_handle(multi_.get(), easy_.get());
  }
  HttpStream(const HttpStream&) = delete;
  HttpStream& operator=(const HttpStream&) = delete;

  std::span<const std::uint8_t> read() override {
    chunk_.clear();  // the caller is done with the previous chunk
    if (paused_) {   // hands over what libcurl held back (on_body, at once)
      paused_ = false;
      curl_easy_pause(easy_.get(), CURLPAUSE_CONT);
      if (!chunk_.empty()) {
        delivered_ += chunk_.size();
        new_bytes_ = true;
        return {chunk_.data(), chunk_.size()};
      }
    }
    for (;;) {
      if (finished_) return {};
      if (!draining_ && cancellation_ != nullptr && cancellation_->cancelled())
        throw ShardReadError("cancelled",
                             "'" + request_.name + "': cancelled at byte " + std::to_string(delivered_));
      if (!running_) start();
      int running = 0;
      const CURLMcode code = curl_multi_perform(multi_.get(), &running);
      if (code != CURLM_OK)
        throw ShardReadError("http", "'" + request_.name + "': " + curl_multi_strerror(code) + " at byte " +
                                         std::to_string(delivered_));
      // Bytes first: those received before a failure are good, and the failure is handled on the next call.
      if (!chunk_.empty()) {
        delivered_ += chunk_.size();
        new_bytes_ = true;
        return {chunk_.data(), chunk_.size()};
      }
      if (std::optional<CURLcode> result = completed()) {
        end_transfer(*result);
        continue;
      }
      // Wakes when the socket has something, or after 100 ms to look at the cancellation.
      curl_multi_poll(multi_.get(), nullptr, 0, 100, nullptr);
    }
  }

  std::uint64_t skip(std::uint64_t) override { return 0; }  // a new request per skip would cost more
  void drain_only() noexcept override { draining_ = true; }
  std::uint64_t position() const noexcept override { return delivered_; }
  const std::string& location() const noexcept override { return request_.name; }
  std::optional<std::uint64_t> size() const noexcept override { return total_; }
  const std::string& etag() const noexcept override { return etag_; }

 private:
  // A transfer from the first byte not yet delivered.
  void start() {
    paused_ = false;
    error_buffer_[0] = '\0';
    response_started_ = false;
    refused_ = false;
    error_body_.clear();
    repeat_ = 0;
    response_ = {};
    protocol_error_.clear();
    new_bytes_ = false;
    const std::string range = std::to_string(delivered_) + "-";
    curl_easy_setopt(easy_.get(), CURLOPT_RANGE, delivered_ > 0 ? range.c_str() : nullptr);
    const CURLMcode code = curl_multi_add_handle(multi_.get(), easy_.get());
    if (code != CURLM_OK)
      throw ShardReadError("http", "'" + request_.name + "': " + curl_multi_strerror(code));
    running_ = true;
  }

  std::optional<CURLcode> completed() {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi_.get(), &left))
      if (message->msg == CURLMSG_DONE && message->easy_handle == easy_.get()) return message->data.result;
    return std::nullopt;
  }

  void end_transfer(CURLcode result) {
    curl_multi_remove_handle(multi_.get(), easy_.get());
    running_ = false;
    long status = 0;
    curl_easy_getinfo(easy_.get(), CURLINFO_RESPONSE_CODE, &status);
    if (refused_ || (result == CURLE_OK && status >= 300)) {
      const std::string what = describe_http_failure(status, error_body_);
      const bool transient = transient_status(status) || parse_store_error(error_body_).code == "SlowDown";
      return fail("http_" + std::to_string(status), what, transient);
    }
    if (result == CURLE_OK) {
      if (total_ && delivered_ < *total_)
        fail("truncated", "the response ended " + std::to_string(*total_ - delivered_) + " bytes early",
             true);
      else
        finished_ = true;
      return;
    }
    if (total_ && delivered_ >= *total_) {  // the connection broke after the last byte: nothing is missing
      finished_ = true;
      return;
    }
    if (result == CURLE_WRITE_ERROR && !protocol_error_.empty()) return fail("http", protocol_error_, false);
    const std::string what = error_buffer_[0] != '\0' ? error_buffer_ : curl_easy_strerror(result);
    switch (result) {
      case CURLE_OPERATION_TIMEDOUT:
        return fail("timeout", what, true);
      case CURLE_PARTIAL_FILE:
        return fail("truncated", what, true);
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
      case CURLE_COULDNT_CONNECT:
      case CURLE_RECV_ERROR:
      case CURLE_SEND_ERROR:
      case CURLE_GOT_NOTHING:
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_HTTP2:
      case CURLE_HTTP2_STREAM:
        return fail("connection", what, true);
      default:
        return fail("http", what, false);
    }
  }

  // Makes the transfer again after a back-off when `transient` and attempts are left; throws otherwise.
  void fail(const std::string& kind, const std::string& what, bool transient) {
    if (new_bytes_) attempts_ = 0;  // that transfer moved the stream on: the budget is per place
    if (transient && !draining_ && attempts_ < options_.retries) {
      const auto delay = retry_wait(options_, attempts_, random_);
      ++attempts_;
      if (counters_ != nullptr) RemoteCounters::add(counters_->retries);
      if (cancellation_ == nullptr || cancellation_->wait_for(delay)) return;  // read() starts it again
    }
    const int made = attempts_ + 1;
    throw ShardReadError(
        kind, "'" + request_.name + "': " + what + " at byte " + std::to_string(delivered_) +
                  (transient ? " (" + std::to_string(made) + (made == 1 ? " attempt)" : " attempts)")
                             : std::string()));
  }

  // The body's first bytes of a response: is it the part we asked for? A refusal's body is kept instead.
  bool accept_response() {
    long status = 0;
    curl_easy_getinfo(easy_.get(), CURLINFO_RESPONSE_CODE, &status);
    response_started_ = true;
    if (status >= 300) {
      refused_ = true;
      return true;
    }
    std::optional<std::uint64_t> total;
    if (status == 206) {
      if (!response_.range_start || *response_.range_start != delivered_) {
        protocol_error_ = "a 206 answer does not start at byte " + std::to_string(delivered_);
        return false;
      }
      total = response_.range_total;
    } else {
      repeat_ = delivered_;  // a 200 answer (no Range support): everything again, pass over what we have
      curl_off_t length = -1;
      curl_easy_getinfo(easy_.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
      if (length >= 0) total = static_cast<std::uint64_t>(length);
    }
    if (total) {
      if (total_ && *total_ != *total) {
        protocol_error_ = "the shard changed size from " + std::to_string(*total_) + " to " +
                          std::to_string(*total) + " bytes between two requests";
        return false;
      }
      total_ = total;
    }
    if (!response_.etag.empty()) {
      if (!etag_.empty() && etag_ != response_.etag) {
        protocol_error_ =
            "the object changed (ETag " + etag_ + ", then " + response_.etag + ") between two requests";
        return false;
      }
      etag_ = response_.etag;
    }
    return true;
  }

  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* self_pointer) {
    auto* self = static_cast<HttpStream*>(self_pointer);
    const std::size_t bytes = size * count;
    if (!self->response_started_ && !self->accept_response()) return 0;  // aborts with CURLE_WRITE_ERROR
    if (self->refused_) {
      const std::size_t room = kMaxErrorBody - std::min(kMaxErrorBody, self->error_body_.size());
      self->error_body_.append(data, std::min(room, bytes));
      return bytes;
    }
    if (!self->chunk_.empty() && self->chunk_.size() + bytes > kMaxChunk) {
      self->paused_ = true;  // libcurl keeps these bytes and gives them again after CURLPAUSE_CONT
      return CURL_WRITEFUNC_PAUSE;
    }
    if (self->counters_ != nullptr) RemoteCounters::add(self->counters_->bytes_fetched, bytes);
    std::size_t offset = 0;
    if (self->repeat_ > 0) {
      offset = static_cast<std::size_t>(std::min<std::uint64_t>(self->repeat_, bytes));
      self->repeat_ -= offset;
    }
    self->chunk_.insert(self->chunk_.end(), data + offset, data + bytes);
    return bytes;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* self_pointer) {
    auto* self = static_cast<HttpStream*>(self_pointer);
    self->response_.add(std::string_view(data, size * count));
    return size * count;
  }

  const RemoteRequest request_;
  const HttpOptions options_;
  const Cancellation* const cancellation_;
  bool draining_ = false;  // drain_only(): no cancellation, no retry
  RemoteCounters* const counters_;
  std::minstd_rand random_;  // the retries' jitter
  HeaderList headers_;
  std::unique_ptr<CURLM, MultiDeleter> multi_;
  EasyHandle easy_;  // removed from multi_ before either is cleaned up
  char error_buffer_[CURL_ERROR_SIZE] = {};

  std::vector<std::uint8_t> chunk_;     // filled by on_body, handed out by read()
  std::uint64_t delivered_ = 0;         // bytes handed out: the stream's position
  std::optional<std::uint64_t> total_;  // the shard's size, once a response said
  std::string etag_;                    // the object's ETag, once a response said
  int attempts_ = 0;                    // failed attempts since bytes last moved the stream on
  bool running_ = false;
  bool finished_ = false;
  bool paused_ = false;  // on_body paused the transfer: the chunk was full

  // The current response.
  ResponseHeaders response_;
  bool response_started_ = false;
  bool refused_ = false;  // a status of 300 or more: the body is the server's reason
  std::string error_body_;
  bool new_bytes_ = false;
  std::uint64_t repeat_ = 0;  // bytes still to pass over (a 200 answer to a Range request)
  std::string protocol_error_;
};

}  // namespace

std::unique_ptr<ByteStream> open_http_stream(RemoteRequest request, const HttpOptions& http,
                                             const Cancellation* cancellation, RemoteCounters* counters) {
  return std::make_unique<HttpStream>(std::move(request), http, cancellation, counters);
}

std::unique_ptr<ByteStream> open_http_stream(const std::string& url, const HttpOptions& http,
                                             const Cancellation* cancellation) {
  return open_http_stream(RemoteRequest{url, url, http.headers, {}, {}}, http, cancellation, nullptr);
}

}  // namespace conveyor::detail
