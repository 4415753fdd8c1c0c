// Normalize as an op on a DeviceBatch, wherever the batch is: (pixel - mean) / std per channel to
// float32/float16/bfloat16, NCHW or NHWC (conveyor/ops/normalize.h has the CPU form on images).
#pragma once

#include "conveyor/cuda/device_batch.h"
#include "conveyor/ops/normalize.h"

namespace conveyor {

// batch.size() images into `out`: device memory of the batch's GPU, enqueued on the batch's consumer
// stream (conveyor/cuda/stream.h has the form that takes a stream); host memory for a batch on the CPU,
// done before the call returns. Throws InvalidArgument for an empty batch or bad params.
void normalize(const DeviceBatch& batch, const ops::NormalizeParams& params, void* out);

}  // namespace conveyor
