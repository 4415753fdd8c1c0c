// Where one rank of a data-parallel job runs: the examples' --device (auto, cpu, gpu, gpu:N) read with the
// launcher's ranks. Alone, the spec as it is. Under a launcher every process trains on one GPU, its local
// rank's (as torchrun's LOCAL_RANK means it, or the only one it sees where the launcher gave each its own:
// conveyor::resolve_rank_gpu), or all on the CPU: "auto" is the local rank's GPU when GPUs are visible and
// the CPU otherwise, "gpu" the local rank's, and "gpu:N" is refused, since N processes cannot all take GPU N.
#pragma once

#include <string>

#include "conveyor/cuda/device.h"
#include "conveyor/error.h"
#include "conveyor/ranks.h"

namespace example_support {

inline conveyor::Placement rank_placement(const std::string& device, const conveyor::Ranks& ranks) {
  conveyor::DeviceSpec spec = conveyor::DeviceSpec::parse(device);
  if (ranks.world_size == 1 || spec.kind == conveyor::DeviceSpec::Kind::cpu) return conveyor::resolve(spec);
  if (spec.kind == conveyor::DeviceSpec::Kind::gpu && device != "gpu")
    throw conveyor::InvalidArgument("--device " + device +
                                    ": under a launcher each process trains on the GPU of its local rank; "
                                    "give --device gpu, auto or cpu");
  if (spec.kind == conveyor::DeviceSpec::Kind::automatic && !conveyor::resolve(spec).gpu)
    return conveyor::resolve(spec);  // no GPU visible: every rank on the CPU
  return conveyor::resolve_rank_gpu(ranks);
}

}  // namespace example_support
