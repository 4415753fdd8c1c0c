// The GPU twin of ops::normalize_batch (conveyor/ops/normalize.h): a uint8 NHWC batch already on the
// device to float32/float16/bfloat16, NCHW or NHWC, per-channel mean/std, so only bytes cross the bus.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "conveyor/image.h"
#include "conveyor/ops/normalize.h"

namespace conveyor::ops {

// normalize_batch on the GPU, enqueued on `stream`: reads 16 bytes per thread (when the input is
// 16-byte aligned) and writes contiguous runs, so loads and stores are coalesced. Gives the same bits as
// the CPU form. Launch failures throw DeviceError.
void normalize_batch_cuda(const std::uint8_t* nhwc_device, std::size_t count, ImageShape shape,
                          const NormalizeParams& params, void* out_device, cudaStream_t stream);

}  // namespace conveyor::ops
