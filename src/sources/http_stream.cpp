// ByteStream over HTTP(S) through libcurl. libcurl pushes bytes into a write callback while libarchive
// pulls them through its read callback; the multi interface joins the two on one thread: read() drives the
// transfer (curl_multi_perform, curl_multi_poll) until the callback has put bytes into the chunk that read()
// hands out. So a shard reader needs no second thread per transfer, and the bytes in memory are one chunk.
//
// Failures: a transfer that fails (connection refused or dropped, a timeout, a response shorter than its
// Content-Length, HTTP 408/429/5xx) is made again after a back-off, from the first byte not yet delivered:
// with "Range: bytes=N-" when bytes were delivered (206 continues there; a 200 sends everything again and
// the first N bytes are passed over). HttpOptions::retries bounds the attempts that deliver no new byte, so
// a server that keeps failing at the same place ends in an error naming the URL and the byte offset.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <stdexcept>
#include <vector>

#include "src/sources/byte_stream.h"
#include "src/sources/cancellation.h"
#include "src/sources/shard_read_error.h"

namespace conveyor::detail {
namespace {

// libcurl's process-wide set-up, done once before the first transfer (curl_global_init is not safe to
// race with other threads' libcurl calls, so it runs under C++'s thread-safe static initialisation).
class CurlLibrary {
 public:
  CurlLibrary() {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw IoError("libcurl could not be initialised");
  }
  ~CurlLibrary() { curl_global_cleanup(); }
  CurlLibrary(const CurlLibrary&) = delete;
  CurlLibrary& operator=(const CurlLibrary&) = delete;
};

void require_curl() { static const CurlLibrary library; }

struct EasyDeleter {
  void operator()(CURL* easy) const noexcept { curl_easy_cleanup(easy); }
};
struct MultiDeleter {
  void operator()(CURLM* multi) const noexcept { curl_multi_cleanup(multi); }
};
struct ListDeleter {
  void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

std::optional<std::uint64_t> parse_number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

class HttpStream final : public ByteStream {
 public:
  HttpStream(std::string url, const HttpOptions& options, const Cancellation* cancellation)
      : url_(std::move(url)), options_(options), cancellation_(cancellation) {
    require_curl();
    easy_.reset(curl_easy_init());
    multi_.reset(curl_multi_init());
    if (!easy_ || !multi_) throw ShardReadError("io", "'" + url_ + "': libcurl could not make a handle");
    for (const std::string& header : options_.headers) {
      curl_slist* list = curl_slist_append(headers_.get(), header.c_str());
      if (list == nullptr) throw std::bad_alloc();
      headers_.release();
      headers_.reset(list);
    }
    configure();
  }
  ~HttpStream() override {
    if (running_) curl_multi_remove_handle(multi_.get(), easy_.get());
  }
  HttpStream(const HttpStream&) = delete;
  HttpStream& operator=(const HttpStream&) = delete;

  std::span<const std::uint8_t> read() override {
    chunk_.clear();  // the caller is done with the previous chunk
    for (;;) {
      if (finished_) return {};
      if (cancellation_ != nullptr && cancellation_->cancelled())
        throw ShardReadError("cancelled", "'" + url_ + "': cancelled at byte " + std::to_string(delivered_));
      if (!running_) start();
      int running = 0;
      const CURLMcode code = curl_multi_perform(multi_.get(), &running);
      if (code != CURLM_OK)
        throw ShardReadError("http", "'" + url_ + "': " + curl_multi_strerror(code) + " at byte " +
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
  std::uint64_t position() const noexcept override { return delivered_; }
  const std::string& location() const noexcept override { return url_; }

 private:
  void configure() {
    CURL* easy = easy_.get();
    curl_easy_setopt(easy, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: we run on many threads
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(easy, CURLOPT_FAILONERROR, 1L);  // HTTP >= 400 fails the transfer before any body
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options_.low_speed_bytes));
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.low_speed_time.count()));
    curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer_);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &HttpStream::on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &HttpStream::on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, this);
    if (headers_) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers_.get());
  }

  // A transfer from the first byte not yet delivered.
  void start() {
    error_buffer_[0] = '\0';
    response_started_ = false;
    repeat_ = 0;
    range_start_.reset();
    range_total_.reset();
    protocol_error_.clear();
    new_bytes_ = false;
    const std::string range = std::to_string(delivered_) + "-";
    curl_easy_setopt(easy_.get(), CURLOPT_RANGE, delivered_ > 0 ? range.c_str() : nullptr);
    const CURLMcode code = curl_multi_add_handle(multi_.get(), easy_.get());
    if (code != CURLM_OK) throw ShardReadError("http", "'" + url_ + "': " + curl_multi_strerror(code));
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
    if (result == CURLE_HTTP_RETURNED_ERROR) {
      const bool transient = status == 408 || status == 429 || status >= 500;
      return fail("http_" + std::to_string(status), "HTTP " + std::to_string(status), transient);
    }
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
    if (transient && attempts_ < options_.retries) {
      const int shift = std::min(attempts_, 10);
      const auto delay = std::min(options_.retry_delay * (1 << shift), std::chrono::milliseconds(8000));
      ++attempts_;
      if (cancellation_ == nullptr || cancellation_->wait_for(delay)) return;  // read() starts it again
    }
    const int made = attempts_ + 1;
    throw ShardReadError(
        kind, "'" + url_ + "': " + what + " at byte " + std::to_string(delivered_) +
                  (transient ? " (" + std::to_string(made) + (made == 1 ? " attempt)" : " attempts)")
                             : std::string()));
  }

  // The body's first bytes of a response: is it the part we asked for?
  bool accept_response() {
    long status = 0;
    curl_easy_getinfo(easy_.get(), CURLINFO_RESPONSE_CODE, &status);
    std::optional<std::uint64_t> total;
    if (status == 206) {
      if (!range_start_ || *range_start_ != delivered_) {
        protocol_error_ = "a 206 answer does not start at byte " + std::to_string(delivered_);
        return false;
      }
      total = range_total_;
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
    response_started_ = true;
    return true;
  }

  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* self_pointer) {
    auto* self = static_cast<HttpStream*>(self_pointer);
    const std::size_t bytes = size * count;
    if (!self->response_started_ && !self->accept_response()) return 0;  // aborts with CURLE_WRITE_ERROR
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
    const std::string_view line(data, size * count);
    if (starts_with_nocase(line, "HTTP/")) {  // a new response (after a redirect): forget the last one's
      self->range_start_.reset();
      self->range_total_.reset();
    } else if (starts_with_nocase(line, "Content-Range:")) {
      // "Content-Range: bytes START-END/TOTAL" (TOTAL may be "*")
      const std::size_t space = line.find("bytes ");
      const std::size_t dash = line.find('-', space);
      const std::size_t slash = line.find('/', dash);
      if (space != std::string_view::npos && dash != std::string_view::npos &&
          slash != std::string_view::npos) {
        self->range_start_ = parse_number(line.substr(space + 6, dash - space - 6));
        self->range_total_ = parse_number(line.substr(slash + 1));
      }
    }
    return size * count;
  }

  const std::string url_;
  const HttpOptions options_;
  const Cancellation* const cancellation_;
  std::unique_ptr<curl_slist, ListDeleter> headers_;
  std::unique_ptr<CURLM, MultiDeleter> multi_;
  std::unique_ptr<CURL, EasyDeleter> easy_;  // removed from multi_ before either is cleaned up
  char error_buffer_[CURL_ERROR_SIZE] = {};

  std::vector<std::uint8_t> chunk_;     // filled by on_body, handed out by read()
  std::uint64_t delivered_ = 0;         // bytes handed out: the stream's position
  std::optional<std::uint64_t> total_;  // the shard's size, once a response said
  int attempts_ = 0;                    // failed attempts since bytes last moved the stream on
  bool running_ = false;
  bool finished_ = false;

  // The current response.
  bool response_started_ = false;
  bool new_bytes_ = false;
  std::uint64_t repeat_ = 0;  // bytes still to pass over (a 200 answer to a Range request)
  std::optional<std::uint64_t> range_start_, range_total_;
  std::string protocol_error_;
};

}  // namespace

std::unique_ptr<ByteStream> open_http_stream(const std::string& url, const HttpOptions& http,
                                             const Cancellation* cancellation) {
  return std::make_unique<HttpStream>(url, http, cancellation);
}

}  // namespace conveyor::detail
