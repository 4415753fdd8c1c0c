// The CPU half of the feeder's decoding: deferred samples nvJPEG refused (or that no GPU decoder could
// take) decoded with ops::decode_deferred_crop, the op's own pixels, and copied into their device slots.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "conveyor/batch.h"
#include "src/device/decode/device_decoder.h"
#include "src/device/retained_host_buffer.h"

namespace conveyor::cuda {

// One deferred sample to decode on the CPU, and why it comes here.
struct CpuFallback {
  std::size_t sample = 0;
  std::string reason;
};

// Decodes each of `which` into `staging` (grown when too small, its old block kept) and copies it into its
// slot of `pixels` (device memory, batch.size() images) on `stream`. A sample the CPU cannot decode either is
// zeroed there and listed in outcome.failed; the others count in outcome.cpu, their reasons in
// outcome.fallback_reasons. `staging` must not be reused before `stream` has passed this point.
void decode_on_cpu(const Batch& batch, std::span<const CpuFallback> which, std::uint8_t* pixels,
                   cudaStream_t stream, RetainedHostBuffer& staging, DeviceDecodeOutcome& outcome);

}  // namespace conveyor::cuda
