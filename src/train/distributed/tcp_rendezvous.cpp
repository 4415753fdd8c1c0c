// The TCP rendezvous: a star around rank 0. Rank 0 listens; every other rank connects (retrying while
// rank 0 is not up yet) and says who it is; rank 0 accepts until all have come or the timeout passes.
// The connections stay open: a broadcast is rank 0 sending the bytes down each of them, a barrier is every
// rank sending "arrived" up and rank 0, once all have, sending "go" down. Messages are 16-byte frames in
// network byte order: {magic, kind, a, b}; a broadcast's bytes follow their frame.
#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "conveyor/train/rendezvous.h"
#include "src/train/distributed/rendezvous_factory.h"
#include "src/train/distributed/stream_socket.h"

namespace conveyor::train::detail {
namespace {

constexpr std::uint32_t kMagic = 0x43565244;  // "CVRD"
constexpr std::uint32_t kVersion = 1;
enum Kind : std::uint32_t { hello = 1, bytes = 2, arrived = 3, go = 4 };
constexpr std::uint64_t kMaxBroadcastBytes = std::uint64_t{1} << 30;

struct Frame {
  std::uint32_t magic = kMagic, kind = 0, a = 0, b = 0;
};

std::array<std::uint8_t, 16> encode(const Frame& frame) {
  std::array<std::uint8_t, 16> out{};
  const std::uint32_t words[4] = {htonl(frame.magic), htonl(frame.kind), htonl(frame.a), htonl(frame.b)};
  std::memcpy(out.data(), words, sizeof words);
  return out;
}

Frame decode(const std::array<std::uint8_t, 16>& in) {
  std::uint32_t words[4];
  std::memcpy(words, in.data(), sizeof words);
  return Frame{ntohl(words[0]), ntohl(words[1]), ntohl(words[2]), ntohl(words[3])};
}

std::string describe(StreamSocket::Status status) {
  switch (status) {
    case StreamSocket::Status::done:
      return "done";
    case StreamSocket::Status::closed:
      return "closed its connection";
    case StreamSocket::Status::timed_out:
      return "did not answer in time";
    case StreamSocket::Status::failed:
      return "failed";
  }
  return "?";
}

class TcpRendezvous final : public Rendezvous {
 public:
  TcpRendezvous(const Ranks& ranks, std::string host, int port, const RendezvousOptions& options)
      : Rendezvous(ranks), host_(std::move(host)), port_(port), timeout_(options.timeout) {
    where_ = "rendezvous on " + host_ + ":" + std::to_string(port_) + " (rank " + std::to_string(ranks.rank) +
             " of " + std::to_string(ranks.world_size) + ")";
    if (ranks.world_size == 1) return;
    if (ranks.is_main()) {
      gather();
    } else {
      join();
    }
  }

  std::vector<std::uint8_t> broadcast(std::span<const std::uint8_t> data) override {
    const Clock::time_point deadline = Clock::now() + timeout_;
    const int step = ++broadcasts_;
    if (ranks().is_main()) {
      if (data.size() > kMaxBroadcastBytes) throw RendezvousError(where_ + ": broadcast of more than 1 GiB");
      const Frame frame{kMagic, Kind::bytes, static_cast<std::uint32_t>(data.size() >> 32),
                        static_cast<std::uint32_t>(data.size())};
      for (auto& [rank, socket] : peers_) {
        send(socket, frame, rank, "broadcast " + std::to_string(step), deadline);
        check(socket.send_all(data, deadline), rank, "broadcast " + std::to_string(step));
      }
      return {data.begin(), data.end()};
    }
    if (ranks().world_size == 1) return {data.begin(), data.end()};
    const Frame frame = receive(master_, 0, Kind::bytes, "broadcast " + std::to_string(step), deadline);
    const std::uint64_t size = (std::uint64_t{frame.a} << 32) | frame.b;
    if (size > kMaxBroadcastBytes)
      throw RendezvousError(where_ + ": rank 0 announced " + std::to_string(size) + " bytes");
    std::vector<std::uint8_t> out(size);
    check(master_.receive_all(out, deadline), 0, "broadcast " + std::to_string(step));
    return out;
  }

  void barrier() override {
    if (ranks().world_size == 1) return;
    const Clock::time_point deadline = Clock::now() + timeout_;
    const std::uint32_t step = ++barriers_;
    const std::string what = "barrier " + std::to_string(step);
    if (!ranks().is_main()) {
      send(master_, Frame{kMagic, Kind::arrived, step, static_cast<std::uint32_t>(ranks().rank)}, 0, what,
           deadline);
      const Frame answer = receive(master_, 0, Kind::go, what, deadline);
      if (answer.a != step)
        throw RendezvousError(where_ + ": rank 0 is at barrier " + std::to_string(answer.a) +
                              ", this rank at " + std::to_string(step));
      return;
    }
    // Rank 0 waits for every rank's "arrived", in whatever order they come.
    std::vector<int> waiting;
    for (const auto& [rank, socket] : peers_) waiting.push_back(rank);
    while (!waiting.empty()) {
      std::vector<pollfd> fds;
      for (const int rank : waiting) fds.push_back({peers_.at(rank).fd(), POLLIN, 0});
      const int ready = ::poll(fds.data(), fds.size(), milliseconds_until(deadline));
      if (ready == 0 || (ready < 0 && errno != EINTR))
        throw RendezvousError(where_ + ": ranks " + rank_list(waiting) + " did not reach " + what +
                              " within " + std::to_string(timeout_.count()) + " ms");
      std::vector<int> still;
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) {
          still.push_back(waiting[i]);
          continue;
        }
        const Frame frame = receive(peers_.at(waiting[i]), waiting[i], Kind::arrived, what, deadline);
        if (frame.a != step)
          throw RendezvousError(where_ + ": rank " + std::to_string(waiting[i]) + " is at barrier " +
                                std::to_string(frame.a) + ", rank 0 at " + std::to_string(step));
      }
      waiting = std::move(still);
    }
    for (auto& [rank, socket] : peers_) send(socket, Frame{kMagic, Kind::go, step, 0}, rank, what, deadline);
  }

 private:
  // Rank 0: accepts until every other rank has said hello.
  void gather() {
    const Clock::time_point deadline = Clock::now() + timeout_;
    const int world = ranks().world_size;
    StreamSocket listener = listen_on(family_of(host_, port_), port_, world);
    while (static_cast<int>(peers_.size()) < world - 1) {
      StreamSocket socket = accept_until(listener, deadline);
      if (!socket) {
        std::vector<int> missing;
        for (int rank = 1; rank < world; ++rank)
          if (!peers_.count(rank)) missing.push_back(rank);
        throw RendezvousError(where_ + ": " + std::to_string(missing.size()) + " of " +
                              std::to_string(world - 1) + " ranks did not connect within " +
                              std::to_string(timeout_.count()) + " ms: rank" +
                              (missing.size() > 1 ? "s " : " ") + rank_list(missing));
      }
      std::array<std::uint8_t, 16> raw{};
      // A connection that is not a rank (a port scan, a health check) is dropped, not an error.
      const Clock::time_point hello_deadline = std::min(deadline, Clock::now() + std::chrono::seconds(10));
      if (socket.receive_all(raw, hello_deadline) != StreamSocket::Status::done) continue;
      const Frame frame = decode(raw);
      if (frame.magic != kMagic || frame.kind != Kind::hello) continue;
      const int rank = static_cast<int>(frame.b & 0x7fffffff);
      const int their_world = static_cast<int>(frame.a >> 8);
      if ((frame.a & 0xff) != kVersion)
        throw RendezvousError(where_ + ": rank " + std::to_string(rank) + " speaks protocol version " +
                              std::to_string(frame.a & 0xff) + ", rank 0 " + std::to_string(kVersion));
      if (their_world != world)
        throw RendezvousError(where_ + ": rank " + std::to_string(rank) + " says the world has " +
                              std::to_string(their_world) + " ranks, rank 0 says " + std::to_string(world));
      if (rank < 1 || rank >= world)
        throw RendezvousError(where_ + ": a peer says it is rank " + std::to_string(rank));
      if (peers_.count(rank))
        throw RendezvousError(where_ + ": rank " + std::to_string(rank) + " came twice");
      peers_.emplace(rank, std::move(socket));
    }
  }

  // Other ranks: connects to rank 0 (retrying while it does not listen yet) and says hello.
  void join() {
    const Clock::time_point deadline = Clock::now() + timeout_;
    auto delay = std::chrono::milliseconds(10);
    std::string why;
    for (;;) {
      master_ = connect_once(host_, port_, std::min(deadline, Clock::now() + std::chrono::seconds(5)), why);
      if (master_) break;
      if (Clock::now() >= deadline)
        throw RendezvousError(where_ + ": could not reach rank 0 within " + std::to_string(timeout_.count()) +
                              " ms (last attempt: " + why + ")");
      // Rank 0 may not listen yet: try again shortly (and once more at the deadline).
      std::this_thread::sleep_for(std::min<Clock::duration>(delay, deadline - Clock::now()));
      delay = std::min(delay * 2, std::chrono::milliseconds(500));
    }
    const Frame hello{kMagic, Kind::hello, static_cast<std::uint32_t>(ranks().world_size) << 8 | kVersion,
                      static_cast<std::uint32_t>(ranks().rank)};
    send(master_, hello, 0, "hello", deadline);
  }

  void send(const StreamSocket& socket, const Frame& frame, int peer, const std::string& what,
            Clock::time_point deadline) const {
    const std::array<std::uint8_t, 16> raw = encode(frame);
    check(socket.send_all(raw, deadline), peer, what);
  }

  Frame receive(const StreamSocket& socket, int peer, Kind kind, const std::string& what,
                Clock::time_point deadline) const {
    std::array<std::uint8_t, 16> raw{};
    check(socket.receive_all(raw, deadline), peer, what);
    const Frame frame = decode(raw);
    if (frame.magic != kMagic || frame.kind != kind)
      throw RendezvousError(where_ + ": rank " + std::to_string(peer) +
                            " sent an unexpected message during " + what);
    return frame;
  }

  void check(StreamSocket::Status status, int peer, const std::string& what) const {
    if (status == StreamSocket::Status::done) return;
    throw RendezvousError(
        where_ + ": rank " + std::to_string(peer) + " " + describe(status) + " during " + what +
        (status == StreamSocket::Status::timed_out ? " (" + std::to_string(timeout_.count()) + " ms)"
                                                   : std::string()));
  }

  const std::string host_;
  const int port_;
  const std::chrono::milliseconds timeout_;
  std::string where_;
  std::map<int, StreamSocket> peers_;  // rank 0: one connection per other rank
  StreamSocket master_;                // other ranks: the connection to rank 0
  int broadcasts_ = 0;
  std::uint32_t barriers_ = 0;
};

}  // namespace

std::unique_ptr<Rendezvous> make_tcp_rendezvous(const Ranks& ranks, const std::string& host, int port,
                                                const RendezvousOptions& options) {
  return std::make_unique<TcpRendezvous>(ranks, host, port, options);
}

}  // namespace conveyor::train::detail
