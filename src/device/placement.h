// The placement rules as a pure function of what is visible, so they are tested on any machine.
#pragma once

#include <span>
#include <string>

#include "conveyor/cuda/device.h"

namespace conveyor::detail {

// resolve() with the census given: `visible` are the GPUs the runtime shows, `unavailable_reason` says
// why there are none.
Placement resolve_among(const DeviceSpec& spec, std::span<const GpuInfo> visible,
                        const std::string& unavailable_reason);

// resolve_rank_gpu() with the census given.
Placement rank_gpu_among(const Ranks& ranks, std::span<const GpuInfo> visible,
                         const std::string& unavailable_reason);

}  // namespace conveyor::detail
