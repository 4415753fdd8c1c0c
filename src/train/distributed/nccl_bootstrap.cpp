#include "src/train/distributed/nccl_bootstrap.h"

#include <mpi.h>
#include <stdlib.h>

#include <thread>

#include "conveyor/train/data_parallel.h"
#include "src/train/distributed/mpi_session.h"
#include "src/train/distributed/nccl_bootstrap_address.h"

namespace conveyor::train {
namespace {

using Clock = std::chrono::steady_clock;

NcclId broadcast_by_mpi(const Ranks& ranks, std::chrono::milliseconds timeout) {
  MpiSession::of_this_process(ranks);
  NcclId id{};
  if (ranks.is_main()) id = make_nccl_id();
  const std::string where = "data parallel (rank " + std::to_string(ranks.rank) + " of " +
                            std::to_string(ranks.world_size) + ", NCCL's id by MPI_Bcast)";
  MPI_Request request = MPI_REQUEST_NULL;
  CONVEYOR_MPI(MPI_Ibcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0, MPI_COMM_WORLD, &request),
               where);
  const auto start = Clock::now();
  for (int done = 0;;) {
    CONVEYOR_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE), where);
    if (done) return id;
    if (Clock::now() - start > timeout) {
      MpiSession::of_this_process(ranks).abandoned();
      throw CollectiveError(where + ": rank 0's id did not come within the connect timeout");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

NcclBootstrap bootstrap_nccl(const Ranks& ranks, std::chrono::milliseconds timeout) {
  if (ranks.mpi_launcher) return {broadcast_by_mpi(ranks, timeout), "MPI_Bcast"};
  if (ranks.world_size == 1) return {make_nccl_id(), "one process"};
  const NcclBootstrapAddress address = nccl_bootstrap_address(ranks, process_environment());
  // Not overwritten: a user's own value is the address already.
  if (!address.set_by_user && ::setenv("NCCL_COMM_ID", address.comm_id.c_str(), 0) != 0)
    throw InvalidArgument("data parallel over NCCL: cannot set NCCL_COMM_ID in the environment");
  return {make_nccl_id(), "NCCL_COMM_ID=" + address.comm_id + " (" + address.origin + ")"};
}

}  // namespace conveyor::train
