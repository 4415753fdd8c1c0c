// The GPUs the CUDA runtime can see, or why it sees none: shared by list_gpus(), resolve() and
// library_versions().
#pragma once

#include <string>
#include <vector>

#include "conveyor/cuda/device.h"

namespace conveyor::detail {

struct GpuCensus {
  std::vector<GpuInfo> gpus;
  std::string unavailable_reason;  // set when gpus is empty
};

// Never throws for a missing driver or device. with_free_memory creates a context on every device
// (hundreds of milliseconds and some memory each), so resolve() leaves it off.
GpuCensus take_gpu_census(bool with_free_memory);

}  // namespace conveyor::detail
