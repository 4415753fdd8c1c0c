// What evaluation with the mirror image (test-time flip) needs besides the network: mirroring a batch of
// NHWC images left-right, keeping one pass's logits, and averaging two passes' logits. On the CPU
// reference or on the context's stream.
#pragma once

#include <cstddef>

#include "src/train/layers/context.h"

namespace conveyor::nn {

// Mirrors every image of x left-right, in place.
void mirror_width(Context& ctx, const Tensor& x);
// to[i] = from[i] for count float32 values.
void copy_floats(Context& ctx, const float* from, float* to, std::size_t count);
// x[i] = (x[i] + y[i]) / 2 for count float32 values.
void average_into(Context& ctx, float* x, const float* y, std::size_t count);

}  // namespace conveyor::nn
