// A TCP connection for the rendezvous: RAII over the descriptor, and sends and receives that give up at
// a deadline instead of blocking (the socket is non-blocking; poll waits for it).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace conveyor::train::detail {

using Clock = std::chrono::steady_clock;

class StreamSocket {
 public:
  StreamSocket() = default;
  explicit StreamSocket(int fd) noexcept : fd_(fd) {}
  ~StreamSocket();
  StreamSocket(StreamSocket&& other) noexcept;
  StreamSocket& operator=(StreamSocket&& other) noexcept;
  StreamSocket(const StreamSocket&) = delete;
  StreamSocket& operator=(const StreamSocket&) = delete;

  int fd() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }

  // What happened to a send or a receive.
  enum class Status { done, closed, timed_out, failed };
  Status send_all(std::span<const std::uint8_t> bytes, Clock::time_point deadline) const;
  Status receive_all(std::span<std::uint8_t> bytes, Clock::time_point deadline) const;

 private:
  int fd_ = -1;
};

// Listens on every address of `family` (AF_INET or AF_INET6) at `port`; throws RendezvousError.
StreamSocket listen_on(int family, int port, int backlog);
// The family of host's first address (AF_INET for "127.0.0.1"); throws RendezvousError naming the host.
int family_of(const std::string& host, int port);
// One connection to host:port, or an empty socket when the attempt failed (refused, unreachable, slower
// than `deadline`); `why` tells which.
StreamSocket connect_once(const std::string& host, int port, Clock::time_point deadline, std::string& why);
// A connection waiting on `listener` accepted before `deadline`, or an empty socket.
StreamSocket accept_until(const StreamSocket& listener, Clock::time_point deadline);

// Milliseconds left until `deadline` for poll(), 0 when it has passed.
int milliseconds_until(Clock::time_point deadline);

}  // namespace conveyor::train::detail
