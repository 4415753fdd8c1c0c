#include "support/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

namespace conveyor::testing {
namespace {

const char* reason_of(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 206:
      return "Partial Content";
    case 404:
      return "Not Found";
    case 416:
      return "Range Not Satisfiable";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

// Sends everything it can; gives up quietly when the client has gone.
void send_all(int fd, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

HttpTestServer::HttpTestServer(Handler handler) : handler_(std::move(handler)) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("HttpTestServer: pipe failed");
  wake_read_ = pipe_fds[0];
  wake_write_ = pipe_fds[1];
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("HttpTestServer: socket failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // a free port
  socklen_t length = sizeof address;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    throw std::runtime_error(std::string("HttpTestServer: cannot listen: ") + std::strerror(errno));
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

HttpTestServer::~HttpTestServer() {
  ::close(wake_write_);  // every poll on wake_read_ now returns
  acceptor_.join();
  std::vector<std::thread> connections;
  {
    std::lock_guard lock(mutex_);
    connections.swap(connections_);
  }
  for (std::thread& connection : connections) connection.join();
  ::close(listen_fd_);
  ::close(wake_read_);
}

std::string HttpTestServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<HttpTestServer::Request> HttpTestServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

bool HttpTestServer::wait_readable(int fd) const {
  pollfd fds[2] = {{fd, POLLIN, 0}, {wake_read_, POLLIN, 0}};
  const int ready = ::poll(fds, 2, 10'000);
  return ready > 0 && (fds[1].revents == 0) && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

void HttpTestServer::accept_loop() {
  for (;;) {
    if (!wait_readable(listen_fd_)) {
      pollfd wake{wake_read_, POLLIN, 0};
      if (::poll(&wake, 1, 0) > 0) return;  // stopping
      continue;
    }
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(mutex_);
    connections_.emplace_back([this, fd] { serve(fd); });
  }
}

void HttpTestServer::serve(int fd) {
  std::string head;
  char buffer[4096];
  while (head.find("\r\n\r\n") == std::string::npos) {
    if (!wait_readable(fd)) {
      ::close(fd);
      return;
    }
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      ::close(fd);
      return;
    }
    head.append(buffer, static_cast<std::size_t>(n));
  }
  Request request;
  const std::size_t space = head.find(' ');
  request.path = head.substr(space + 1, head.find(' ', space + 1) - space - 1);
  const std::string headers = lower(head);
  if (const std::size_t range = headers.find("\r\nrange: bytes="); range != std::string::npos)
    request.range_start = std::stoull(headers.substr(range + 15));
  {
    std::lock_guard lock(mutex_);
    for (const Request& earlier : requests_) request.attempt += earlier.path == request.path;
    requests_.push_back(request);
  }
  const Reply reply = handler_(request);
  static const std::vector<std::uint8_t> kEmpty;
  const std::vector<std::uint8_t>& whole = reply.body ? *reply.body : kEmpty;
  int status = reply.status;
  std::size_t from = 0;
  std::string extra;
  if (status == 200 && reply.ranges && request.range_start) {
    if (*request.range_start >= whole.size()) {
      status = 416;
    } else {
      status = 206;
      from = static_cast<std::size_t>(*request.range_start);
      extra = "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(whole.size() - 1) + "/" +
              std::to_string(whole.size()) + "\r\n";
    }
  }
  // A refusal carries the body it was given (an object store's error document), as real servers do.
  const bool has_body = status == 200 || status == 206 || (status >= 400 && reply.body != nullptr);
  const std::size_t length = has_body ? whole.size() - from : 0;
  std::string response = "HTTP/1.1 " + std::to_string(status) + " " + reason_of(status) + "\r\n" +
                         "Content-Length: " + std::to_string(length) + "\r\n" + extra +
                         (reply.ranges ? "Accept-Ranges: bytes\r\n" : "") + "Connection: close\r\n\r\n";
  send_all(fd, response.data(), response.size());
  const std::size_t sent = reply.cut_after ? std::min(*reply.cut_after, length) : length;
  if (has_body && sent > 0) send_all(fd, whole.data() + from, sent);
  if (reply.stall) {
    pollfd wake{wake_read_, POLLIN, 0};
    ::poll(&wake, 1, -1);  // until the server stops
  }
  if (reply.reset) {
    const linger abort{1, 0};  // close() then sends a reset
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  } else {
    ::shutdown(fd, SHUT_WR);
  }
  ::close(fd);
}

HttpTestServer::Handler serve_files(std::vector<std::pair<std::string, std::vector<std::uint8_t>>> files) {
  auto table = std::make_shared<std::map<std::string, std::shared_ptr<const std::vector<std::uint8_t>>>>();
  for (auto& [path, bytes] : files)
    (*table)[path] = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
  return [table](const HttpTestServer::Request& request) {
    HttpTestServer::Reply reply;
    const auto it = table->find(request.path);
    if (it == table->end()) {
      reply.status = 404;
    } else {
      reply.body = it->second;
    }
    return reply;
  };
}

}  // namespace conveyor::testing
