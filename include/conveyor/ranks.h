// Where this process sits in a job of many processes (one per GPU, or several on CPUs, on one or more
// hosts): its rank among all processes, the world size, its rank among the processes of its own host, and
// where rank 0 listens for NCCL's bootstrap. Read from the variables that the launchers set:
//   torchrun (torch.distributed.run):  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
//   Open MPI's mpirun:                 OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
//                                      OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE
//   Slurm's srun:                      SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, and the step's
//                                      tasks on this node: SLURM_STEP_TASKS_PER_NODE ("2(x3),1": two on
//                                      each of three nodes, one on the fourth) at SLURM_NODEID
//   any of them (rank 0's address):    MASTER_ADDR, MASTER_PORT
// A process that no launcher started is rank 0 of 1. torchrun's and Open MPI's variables, which may both be
// set, must agree; Slurm's are read only when neither is set, because everything started inside a Slurm job
// step (mpirun, torchrun) inherits that step's variables, which then describe the step, not this process.
// Slurm's count only when srun started the process: a batch script has SLURM_PROCID and SLURM_NTASKS too,
// but not SLURM_STEP_NUM_TASKS.
//
//   const conveyor::Ranks ranks = conveyor::ranks_from_environment();
//   auto train = conveyor::Dataset::image_folder("train").shuffle(1'000'000, 7).shard(ranks);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace conveyor {

// Which launcher's variables gave the ranks.
enum class RankSource : std::uint8_t {
  single_process,  // none were set
  torchrun,
  open_mpi,
  slurm,
};

// Short, stable name of a RankSource ("torchrun", ...).
const char* to_string(RankSource source) noexcept;

struct Ranks {
  int rank = 0;  // 0 .. world_size - 1
  int world_size = 1;
  int local_rank = 0;        // among the processes on this host: the GPU this process drives
  int local_world_size = 1;  // processes on this host
  std::string master_addr{};  // MASTER_ADDR: rank 0's host (NCCL's bootstrap); empty when not set
  int master_port = 0;       // MASTER_PORT; 0 when not set
  RankSource source = RankSource::single_process;
  // An MPI launcher started the process and waits for it in MPI_Init: mpirun (OMPI_COMM_WORLD_SIZE is
  // set) or a PMIx server such as srun --mpi=pmix (PMIX_RANK). Only then may MPI be initialised: without
  // its launcher Open MPI's MPI_Init starts a daemon of its own, or fails.
  bool mpi_launcher = false;

  bool is_main() const noexcept { return rank == 0; }
  friend bool operator==(const Ranks&, const Ranks&) = default;
};

// Looks up one environment variable; nullopt when it is not set.
using Environment = std::function<std::optional<std::string>(const std::string& name)>;

// The process's own environment (getenv).
Environment process_environment();

// The ranks that the launcher's variables describe. A launcher's variables come in pairs that must be set
// together (RANK with WORLD_SIZE, LOCAL_RANK with LOCAL_WORLD_SIZE, and the same for Open MPI's and
// Slurm's); when the local pair is absent the job is taken to run on one host (local rank = rank). When both
// torchrun's and Open MPI's variables are set they must agree. Throws InvalidArgument naming the variable
// and its value for a value that is not a decimal integer, a rank outside 0 .. size - 1, a size below 1, more
// local than global processes, a missing partner variable, a disagreement between the two launchers, a
// SLURM_STEP_TASKS_PER_NODE that does not parse or has no entry for SLURM_NODEID, or a MASTER_PORT outside
// 1 .. 65535.
Ranks ranks_from_environment(const Environment& environment = process_environment());

}  // namespace conveyor
