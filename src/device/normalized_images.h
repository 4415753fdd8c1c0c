// The tensor a feeder's normalize step writes: N images of `shape` as float32/float16/bfloat16, NCHW or
// NHWC as NormalizeParams says.
#pragma once

#include <cstddef>

#include "conveyor/image.h"
#include "conveyor/ops/normalize.h"
#include "conveyor/tensor.h"

namespace conveyor::detail {

DType dtype_of(ops::ElementType type) noexcept;

TensorView normalized_images(void* data, std::size_t count, ImageShape shape,
                             const ops::NormalizeParams& params, int device, bool pinned);

}  // namespace conveyor::detail
