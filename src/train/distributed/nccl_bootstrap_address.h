// Where rank 0 listens for NCCL's own bootstrap in a job that no MPI launcher started (torchrun,
// scripts/launch.sh without MPI, srun without --mpi=pmix). NCCL reads it from NCCL_COMM_ID: with that
// variable set, ncclGetUniqueId gives every rank the same id without asking anyone, and rank 0's
// ncclCommInitRank listens there while the others connect (NCCL's bootstrap.cc). So the library only has to
// put the same address in every rank's NCCL_COMM_ID.
//
// The rule, in order:
//   1. NCCL_COMM_ID as the user set it: theirs wins.
//   2. MASTER_ADDR:MASTER_PORT + 1 when torchrun's elastic agent holds MASTER_PORT itself: with
//      TORCHELASTIC_USE_AGENT_STORE=True, node 0's agent keeps a TCPStore listening on MASTER_PORT for the
//      whole job (torch.distributed.elastic: the static rendezvous's store, and the c10d rendezvous's shared
//      store), so rank 0 could not listen there. The port above is none of torchrun's (its c10d endpoint is
//      --rdzv-endpoint's port, 29400 by default); it is taken only from the moment NCCL's bootstrap starts.
//   3. MASTER_ADDR:MASTER_PORT otherwise (scripts/launch.sh, torchrun with
//   TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1,
//      a user's own srun script): the launcher reserved that port for the workers' rank 0, which is what
//      NCCL's bootstrap root is.
// A port already taken by something else is an error on rank 0 that names the address and this rule.
#pragma once

#include <optional>
#include <string>

#include "conveyor/ranks.h"

namespace conveyor::train {

struct NcclBootstrapAddress {
  std::string comm_id;  // "host:port", "[v6 address]:port": NCCL_COMM_ID's value
  std::string origin;   // which rule gave it: "NCCL_COMM_ID", "MASTER_ADDR:MASTER_PORT + 1 (...)", ...
  bool set_by_user = false;
};

// The address by the rule above. Throws InvalidArgument, naming the variables, when neither NCCL_COMM_ID
// nor MASTER_ADDR and MASTER_PORT are set (for a job of more than one rank), or MASTER_PORT + 1 is past
// 65535.
NcclBootstrapAddress nccl_bootstrap_address(const Ranks& ranks, const Environment& environment);

}  // namespace conveyor::train
