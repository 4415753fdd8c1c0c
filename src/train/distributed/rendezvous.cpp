#include "conveyor/train/rendezvous.h"

#include <charconv>

#include "src/train/distributed/rendezvous_factory.h"

namespace conveyor::train {

std::unique_ptr<Rendezvous> connect_rendezvous(const Ranks& ranks, const std::string& method,
                                               const RendezvousOptions& options) {
  if (ranks.world_size < 1 || ranks.rank < 0 || ranks.rank >= ranks.world_size)
    throw InvalidArgument("connect_rendezvous: rank " + std::to_string(ranks.rank) + " of world size " +
                          std::to_string(ranks.world_size));
  if (options.timeout.count() <= 0) throw InvalidArgument("connect_rendezvous: the timeout must be positive");
  if (method == "env://") {
    if (ranks.world_size > 1 && (ranks.master_addr.empty() || ranks.master_port == 0))
      throw InvalidArgument("connect_rendezvous(\"env://\"): MASTER_ADDR and MASTER_PORT must be set for " +
                            std::to_string(ranks.world_size) + " ranks");
    return detail::make_tcp_rendezvous(ranks, ranks.master_addr, ranks.master_port, options);
  }
  if (method.starts_with("tcp://")) {
    const std::string address = method.substr(6);
    const std::size_t colon = address.rfind(':');
    int port = 0;
    const char* digits = address.data() + colon + 1;
    const char* end = address.data() + address.size();
    if (colon == std::string::npos || colon == 0 || std::from_chars(digits, end, port).ptr != end ||
        port < 1 || port > 65535)
      throw InvalidArgument("connect_rendezvous: '" + method + "' is not tcp://HOST:PORT");
    std::string host = address.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    return detail::make_tcp_rendezvous(ranks, host, port, options);
  }
  if (method.starts_with("file://") && method.size() > 7)
    return detail::make_file_rendezvous(ranks, method.substr(7), options);
  throw InvalidArgument("connect_rendezvous: unknown method '" + method +
                        "' (env://, tcp://HOST:PORT or file:///FOLDER)");
}

namespace detail {

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (const int rank : ranks) out += (out.empty() ? "" : ", ") + std::to_string(rank);
  return out;
}

}  // namespace detail
}  // namespace conveyor::train
