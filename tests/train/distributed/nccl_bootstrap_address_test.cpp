// Where rank 0 listens for NCCL's own bootstrap without MPI (src/train/distributed/nccl_bootstrap_address.h):
// the user's NCCL_COMM_ID, else MASTER_ADDR:MASTER_PORT, or the port above it where torchrun's agent holds
// MASTER_PORT itself; and a clear error without any of them.
#include "src/train/distributed/nccl_bootstrap_address.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "conveyor/error.h"

namespace conveyor::train {
namespace {

Environment from(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

Ranks torchrun_ranks(const std::string& addr, int port) {
  Ranks ranks;
  ranks.rank = 1;
  ranks.world_size = 4;
  ranks.master_addr = addr;
  ranks.master_port = port;
  ranks.source = RankSource::torchrun;
  return ranks;
}

TEST(NcclBootstrapAddress, IsMasterAddrAndMasterPortWhenNothingElseHoldsThePort) {
  // scripts/launch.sh's processes, a user's srun script, torchrun with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1.
  const NcclBootstrapAddress address = nccl_bootstrap_address(torchrun_ranks("10.0.0.7", 29500), from({}));
  EXPECT_EQ(address.comm_id, "10.0.0.7:29500");
  EXPECT_FALSE(address.set_by_user);
  EXPECT_EQ(address.origin, "MASTER_ADDR:MASTER_PORT");
  EXPECT_EQ(nccl_bootstrap_address(torchrun_ranks("10.0.0.7", 29500),
                                   from({{"TORCHELASTIC_USE_AGENT_STORE", "False"}}))
                .comm_id,
            "10.0.0.7:29500");
}

TEST(NcclBootstrapAddress, TakesThePortAboveWhenTorchrunsAgentHoldsMasterPort) {
  const NcclBootstrapAddress address = nccl_bootstrap_address(
      torchrun_ranks("node-0.cluster", 29500), from({{"TORCHELASTIC_USE_AGENT_STORE", "True"}}));
  EXPECT_EQ(address.comm_id, "node-0.cluster:29501");
  EXPECT_NE(address.origin.find("torchrun's agent holds MASTER_PORT"), std::string::npos) << address.origin;
}

TEST(NcclBootstrapAddress, TheUsersOwnNcclCommIdWins) {
  const NcclBootstrapAddress address = nccl_bootstrap_address(
      torchrun_ranks("10.0.0.7", 29500),
      from({{"NCCL_COMM_ID", "10.0.0.9:40000"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}}));
  EXPECT_EQ(address.comm_id, "10.0.0.9:40000");
  EXPECT_TRUE(address.set_by_user);
  // It is enough alone: no MASTER_ADDR needed.
  EXPECT_EQ(nccl_bootstrap_address(torchrun_ranks("", 0), from({{"NCCL_COMM_ID", "h:1"}})).comm_id, "h:1");
}

TEST(NcclBootstrapAddress, PutsAnIpv6AddressInBrackets) {
  EXPECT_EQ(nccl_bootstrap_address(torchrun_ranks("fd00::1", 29500), from({})).comm_id, "[fd00::1]:29500");
  EXPECT_EQ(nccl_bootstrap_address(torchrun_ranks("[fd00::1]", 29500), from({})).comm_id, "[fd00::1]:29500");
}

TEST(NcclBootstrapAddress, WithoutAnAddressTheErrorSaysWhatToSet) {
  try {
    nccl_bootstrap_address(torchrun_ranks("", 0), from({}));
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("rank 1 of 4"), std::string::npos) << message;
    EXPECT_NE(message.find("MASTER_ADDR and MASTER_PORT"), std::string::npos) << message;
    EXPECT_NE(message.find("NCCL_COMM_ID"), std::string::npos) << message;
  }
  EXPECT_THROW(nccl_bootstrap_address(torchrun_ranks("10.0.0.7", 65535),
                                      from({{"TORCHELASTIC_USE_AGENT_STORE", "True"}})),
               InvalidArgument);
}

}  // namespace
}  // namespace conveyor::train
