// How the ranks of a job get one NCCL id, with no socket of conveyor's own:
//   - started by an MPI launcher (mpirun, srun --mpi=pmix): rank 0 makes the id and MPI_Bcast hands it to
//     every rank, as nccl-tests do;
//   - a job of one process: the process makes its own;
//   - otherwise (torchrun, scripts/launch.sh without MPI, srun): NCCL_COMM_ID is set in the process to the
//     address nccl_bootstrap_address() gives, unless the user set it, and ncclGetUniqueId then gives every
//     rank the same id; rank 0's communicator listens there and the others connect.
#pragma once

#include <chrono>
#include <string>

#include "conveyor/ranks.h"
#include "src/train/distributed/nccl_handle.h"

namespace conveyor::train {

struct NcclBootstrap {
  NcclId id{};
  std::string how;  // "MPI_Bcast", "NCCL_COMM_ID=10.0.0.1:29500 (MASTER_ADDR:MASTER_PORT)", "one process"
};

// The id of this job's communicator. Under MPI, the broadcast waits at most `timeout`. Setting
// NCCL_COMM_ID changes this process's environment: NCCL reads its configuration from there and nowhere else.
NcclBootstrap bootstrap_nccl(const Ranks& ranks, std::chrono::milliseconds timeout);

}  // namespace conveyor::train
