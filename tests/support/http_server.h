// A small HTTP/1.1 server on 127.0.0.1 (a port of its own) for the tests of shards over HTTP, with faults
// on demand: the test's handler answers each request and says how to misbehave (stop after some bytes and
// close or reset the connection, stall, ignore Range requests). One thread accepts, one thread serves each
// connection; the destructor wakes and joins them all, stalled ones included.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace conveyor::testing {

class HttpTestServer {
 public:
  struct Request {
    std::string path;                          // "/shard-000000.tar"
    std::optional<std::uint64_t> range_start;  // from "Range: bytes=N-"
    int attempt = 0;                           // 0 for the first request of this path, then 1, 2, ...
  };
  struct Reply {
    int status = 200;
    std::shared_ptr<const std::vector<std::uint8_t>> body;  // the whole resource (null: empty); with a
                                                            // status of 400 or more, the refusal's body
    bool ranges = true;  // answer "Range: bytes=N-" with 206 and the body from N; false: ignore it (200)
    // Send only this many bytes of the response's body (after announcing all of it), then close.
    std::optional<std::size_t> cut_after;
    bool reset = false;  // close with a TCP reset instead of an orderly shutdown
    bool stall = false;  // after the headers (and cut_after bytes), send nothing until the server stops
  };
  using Handler = std::function<Reply(const Request&)>;

  explicit HttpTestServer(Handler handler);
  ~HttpTestServer();
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  int port() const noexcept { return port_; }
  // "http://127.0.0.1:PORT" + path.
  std::string url(const std::string& path) const;
  // Every request so far, in arrival order.
  std::vector<Request> requests() const;

 private:
  void accept_loop();
  void serve(int fd);
  // Waits until fd is readable or the server stops; false when it stops or after 10 s.
  bool wait_readable(int fd) const;

  Handler handler_;
  int listen_fd_ = -1;
  int wake_read_ = -1, wake_write_ = -1;  // a pipe: closing the write end wakes every poll
  int port_ = 0;

  mutable std::mutex mutex_;
  std::vector<Request> requests_;
  std::vector<std::thread> connections_;
  std::thread acceptor_;
};

// A handler that serves `files` (path -> bytes) and answers 404 for any other path.
HttpTestServer::Handler serve_files(std::vector<std::pair<std::string, std::vector<std::uint8_t>>> files);

}  // namespace conveyor::testing
