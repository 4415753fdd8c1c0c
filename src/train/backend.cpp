// The training wing's one choice of backend (see backend.h): the only file outside the CUDA-only twins
// that depends on whether conveyor was built with CUDA.
#include "src/train/backend.h"

#include <string>

#include "conveyor/error.h"
#include "src/train/cpu_steps.h"
#include "src/train/distributed/mpi_communicator.h"
#include "src/train/distributed/single_rank_communicator.h"
#include "src/train/layers/cpu_context.h"

#ifdef CONVEYOR_HAVE_CUDA
#include "src/train/cuda_backend.h"
#include "src/train/distributed/nccl_communicator.h"
#endif

namespace conveyor::train {

Backend make_backend(const BackendOptions& options) {
  if (options.device < 0) return {std::make_unique<nn::CpuContext>(), std::make_unique<CpuSteps>()};
#ifdef CONVEYOR_HAVE_CUDA
  return make_cuda_backend(options);
#else
  throw InvalidArgument("trainer: GPU " + std::to_string(options.device) +
                        " requested, but conveyor was built without CUDA");
#endif
}

std::unique_ptr<Communicator> make_communicator(const Ranks& ranks, int device,
                                                const CommunicatorOptions& options) {
  if (ranks.world_size < 1 || ranks.rank < 0 || ranks.rank >= ranks.world_size)
    throw InvalidArgument("data parallel: rank " + std::to_string(ranks.rank) + " of world size " +
                          std::to_string(ranks.world_size));
  if (options.connect_timeout.count() <= 0 || options.collective_timeout.count() <= 0)
    throw InvalidArgument("data parallel: the timeouts must be positive");
  if (options.abort_grace.count() < 0)
    throw InvalidArgument("data parallel: the abort grace must not be negative (0: a stuck rank is never ended)");
  if (device < 0) {
    if (ranks.world_size == 1 && !ranks.mpi_launcher) return std::make_unique<SingleRankCommunicator>();
    if (!ranks.mpi_launcher)
      throw InvalidArgument("data parallel on the CPU: rank " + std::to_string(ranks.rank) + " of " +
                            std::to_string(ranks.world_size) + " (from " + to_string(ranks.source) +
                            "'s variables) needs an MPI launcher, which carries the CPU's collectives: start "
                            "the ranks with mpirun -np N, srun --mpi=pmix, or scripts/launch.sh N where "
                            "mpirun is installed");
    return std::make_unique<MpiCommunicator>(ranks, options.connect_timeout, options.collective_timeout);
  }
#ifdef CONVEYOR_HAVE_CUDA
  return std::make_unique<NcclCommunicator>(ranks, device, options.connect_timeout,
                                            options.collective_timeout, options.abort_grace);
#else
  throw InvalidArgument("data parallel: GPU " + std::to_string(device) +
                        " requested, but conveyor was built without CUDA");
#endif
}

DeviceScope::DeviceScope([[maybe_unused]] int device) {
#ifdef CONVEYOR_HAVE_CUDA
  if (device >= 0) changed_ = select_cuda_device(device, previous_);
#endif
}

DeviceScope::~DeviceScope() {
#ifdef CONVEYOR_HAVE_CUDA
  if (changed_) restore_cuda_device(previous_);
#endif
}

void add_backend_library_versions([[maybe_unused]] LibraryVersions& versions) {
#ifdef CONVEYOR_HAVE_CUDA
  add_cuda_library_versions(versions);
#endif
}

}  // namespace conveyor::train
