#include "src/train/distributed/stream_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "conveyor/train/rendezvous.h"

namespace conveyor::train::detail {
namespace {

struct AddressList {
  addrinfo* list = nullptr;
  ~AddressList() {
    if (list != nullptr) freeaddrinfo(list);
  }
};

int resolve(const std::string& host, int port, AddressList& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  return getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &out.list);
}

void make_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Waits for `events` on fd until the deadline: true when they came.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, milliseconds_until(deadline));
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

int milliseconds_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1'000'000'000));
}

StreamSocket::~StreamSocket() {
  if (fd_ >= 0) ::close(fd_);
}

StreamSocket::StreamSocket(StreamSocket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

StreamSocket& StreamSocket::operator=(StreamSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

StreamSocket::Status StreamSocket::send_all(std::span<const std::uint8_t> bytes,
                                            Clock::time_point deadline) const {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd_, POLLOUT, deadline)) return Status::timed_out;
      continue;
    }
    return errno == EPIPE || errno == ECONNRESET ? Status::closed : Status::failed;
  }
  return Status::done;
}

StreamSocket::Status StreamSocket::receive_all(std::span<std::uint8_t> bytes,
                                               Clock::time_point deadline) const {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::recv(fd_, bytes.data() + done, bytes.size() - done, 0);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return Status::closed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(fd_, POLLIN, deadline)) return Status::timed_out;
      continue;
    }
    return errno == ECONNRESET ? Status::closed : Status::failed;
  }
  return Status::done;
}

int family_of(const std::string& host, int port) {
  AddressList addresses;
  if (const int status = resolve(host, port, addresses); status != 0)
    throw RendezvousError("rendezvous: cannot resolve '" + host + "': " + gai_strerror(status));
  return addresses.list->ai_family;
}

StreamSocket listen_on(int family, int port, int backlog) {
  StreamSocket listener(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener)
    throw RendezvousError(std::string("rendezvous: cannot make a socket: ") + std::strerror(errno));
  const int yes = 1;
  ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_storage address{};
  socklen_t length = 0;
  if (family == AF_INET6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    v6->sin6_family = AF_INET6;
    v6->sin6_addr = in6addr_any;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof *v6;
  } else {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    v4->sin_family = AF_INET;
    v4->sin_addr.s_addr = htonl(INADDR_ANY);
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof *v4;
  }
  if (::bind(listener.fd(), reinterpret_cast<sockaddr*>(&address), length) != 0)
    throw RendezvousError("rendezvous: rank 0 cannot listen on port " + std::to_string(port) + ": " +
                          std::strerror(errno) + " (is another job using it? set MASTER_PORT)");
  if (::listen(listener.fd(), backlog) != 0)
    throw RendezvousError(std::string("rendezvous: listen failed: ") + std::strerror(errno));
  make_nonblocking(listener.fd());
  return listener;
}

StreamSocket connect_once(const std::string& host, int port, Clock::time_point deadline, std::string& why) {
  AddressList addresses;
  if (const int status = resolve(host, port, addresses); status != 0) {
    why = std::string("cannot resolve '") + host + "': " + gai_strerror(status);
    return {};
  }
  for (const addrinfo* a = addresses.list; a != nullptr; a = a->ai_next) {
    StreamSocket socket(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!socket) continue;
    make_nonblocking(socket.fd());
    if (::connect(socket.fd(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        why = std::strerror(errno);
        continue;
      }
      if (!wait_for(socket.fd(), POLLOUT, deadline)) {
        why = "no answer";
        continue;
      }
      int error = 0;
      socklen_t size = sizeof error;
      ::getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error, &size);
      if (error != 0) {
        why = std::strerror(error);
        continue;
      }
    }
    const int yes = 1;
    ::setsockopt(socket.fd(), IPPROTO_TCP, TCP_NODELAY, &yes,
                 sizeof yes);  // small messages, answered at once
    return socket;
  }
  return {};
}

StreamSocket accept_until(const StreamSocket& listener, Clock::time_point deadline) {
  for (;;) {
    const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      const int yes = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      return StreamSocket(fd);
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return {};
    if (!wait_for(listener.fd(), POLLIN, deadline)) return {};
  }
}

}  // namespace conveyor::train::detail
