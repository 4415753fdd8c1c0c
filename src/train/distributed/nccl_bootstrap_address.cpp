#include "src/train/distributed/nccl_bootstrap_address.h"

#include "conveyor/error.h"

namespace conveyor::train {

NcclBootstrapAddress nccl_bootstrap_address(const Ranks& ranks, const Environment& environment) {
  if (const std::optional<std::string> own = environment("NCCL_COMM_ID"); own && !own->empty())
    return {*own, "NCCL_COMM_ID as set", true};
  if (ranks.master_addr.empty() || ranks.master_port == 0)
    throw InvalidArgument(
        "data parallel over NCCL: rank " + std::to_string(ranks.rank) + " of " +
        std::to_string(ranks.world_size) +
        " has no address for NCCL's bootstrap: set MASTER_ADDR and MASTER_PORT (torchrun and "
        "scripts/launch.sh do), or NCCL_COMM_ID=host:port, or start the ranks with an MPI launcher");
  const bool agent_store = environment("TORCHELASTIC_USE_AGENT_STORE") == std::optional<std::string>("True");
  const int port = ranks.master_port + (agent_store ? 1 : 0);
  if (port > 65535)
    throw InvalidArgument(
        "data parallel over NCCL: MASTER_PORT=65535 is torchrun's agent's, and NCCL's "
        "bootstrap takes the port above it: choose a lower MASTER_PORT, or set NCCL_COMM_ID");
  // An IPv6 address goes in brackets, as NCCL's address parser wants it.
  const std::string host =
      ranks.master_addr.find(':') != std::string::npos && ranks.master_addr.front() != '['
          ? "[" + ranks.master_addr + "]"
          : ranks.master_addr;
  return {host + ":" + std::to_string(port),
          agent_store ? "MASTER_ADDR:MASTER_PORT + 1 (torchrun's agent holds MASTER_PORT)"
                      : "MASTER_ADDR:MASTER_PORT",
          false};
}

}  // namespace conveyor::train
