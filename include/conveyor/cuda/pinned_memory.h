// Page-locked host memory for a pipeline's batch buffers, so that a GPU copies them asynchronously
// (PipelineOptions::host_memory). DeviceFeeder::feed sets it for you.
#pragma once

#include <memory>

#include "conveyor/cuda/device.h"
#include "conveyor/host_memory.h"

namespace conveyor {

// cudaHostAlloc'd memory (portable: page-locked for every device's context). Throws DeviceError in a
// build without CUDA or when no GPU is visible.
std::shared_ptr<HostMemoryResource> pinned_host_memory();

// The memory a batch bound for `placement` should live in: page-locked for a GPU, pageable for the CPU.
std::shared_ptr<HostMemoryResource> host_memory_for(const Placement& placement);

}  // namespace conveyor
