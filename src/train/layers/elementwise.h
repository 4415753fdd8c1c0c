// The element-wise work a network needs besides its layers: a ReLU of its own (one that does not follow a
// batch norm, into which it would be fused), evaluation with the mirror image (mirroring a batch, keeping
// and averaging two passes' logits), and the working copy of the weights in the compute type. Its twins are
// the CPU reference (elementwise_cpu.h) and CUDA kernels (elementwise_cuda.h); a Context owns the one of its
// backend. Each call is one pass over its arrays (on a GPU, one kernel on the context's stream).
#pragma once

#include <cstddef>

#include "src/train/layers/tensor.h"

namespace conveyor::nn {

class Elementwise {
 public:
  virtual ~Elementwise() = default;

  // y = max(x, 0).
  virtual void relu_forward(const Tensor& x, const Tensor& y) const = 0;
  // dx = dy where y > 0, else 0 (y is the ReLU's output).
  virtual void relu_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) const = 0;
  // Mirrors every image of x left-right, in place.
  virtual void mirror_width(const Tensor& x) const = 0;
  // to[i] = from[i] for count float32 values.
  virtual void copy_floats(const float* from, float* to, std::size_t count) const = 0;
  // x[i] = (x[i] + y[i]) / 2 for count float32 values.
  virtual void average_into(float* x, const float* y, std::size_t count) const = 0;
  // dst = src converted to `type` (float32 master weights to their working copy).
  virtual void convert_from_float(DType type, std::size_t count, const float* src, void* dst) const = 0;
};

}  // namespace conveyor::nn
