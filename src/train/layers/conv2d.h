// Convolution layer: forward, backward data and backward filter, on the CPU reference or on cuDNN.
// The layer owns the shape and, on a GPU, the cuDNN descriptors and the algorithms chosen at warm-up;
// weights and activations are passed in (a model keeps them in flat buffers).
#pragma once

#include <memory>
#include <string>

#include "conveyor/train/nn/shape.h"
#include "src/train/layers/context.h"

namespace conveyor::nn {

class ConvCudnn;

class Conv2d {
 public:
  // needs_input_grad = false for a first layer: its backward_data is never called nor searched for.
  Conv2d(std::string name, ConvGeometry geometry, bool needs_input_grad = true);
  ~Conv2d();
  Conv2d(Conv2d&&) noexcept;
  Conv2d& operator=(Conv2d&&) noexcept;

  const std::string& name() const noexcept { return name_; }
  const ConvGeometry& geometry() const noexcept { return geometry_; }
  Shape4 output_shape() const noexcept { return geometry_.output(); }
  std::size_t weight_count() const noexcept { return geometry_.weight_count(); }

  // GPU: makes the descriptors and picks the fastest algorithm of each direction by timing them on these
  // buffers (once per shape for the whole context), and reserves their workspace; dx may be empty when
  // the input needs no gradient. CPU: nothing. Call Context::allocate_workspace() after every prepare().
  void prepare(Context& ctx, const Tensor& x, const void* w, const Tensor& y, const Tensor& dx, void* dw);
  // Whether prepare() on `ctx` will choose without timing anything on the GPU: on the CPU, with cuDNN's
  // heuristic choice (deterministic algorithms), or when this shape's algorithms are known already (the
  // context's memory, or an entry of the algorithm cache on disk, which prepare() still checks).
  bool prepares_without_timing(Context& ctx) const;

  // y = conv(x, w)
  void forward(Context& ctx, const Tensor& x, const void* w, const Tensor& y) const;
  // dx = conv^T(dy, w), or dx += ... with accumulate (a residual block's input gets two gradients).
  void backward_data(Context& ctx, const Tensor& dy, const void* w, const Tensor& dx, bool accumulate) const;
  // dw = gradient of the filters (overwritten).
  void backward_filter(Context& ctx, const Tensor& x, const Tensor& dy, void* dw) const;

  // "layer1.0.conv1 3x3/1 64->64 56x56" plus, on a GPU, the chosen algorithms and their times.
  std::string describe() const;

 private:
  std::string name_;
  ConvGeometry geometry_;
  bool needs_input_grad_;
  std::unique_ptr<ConvCudnn> cudnn_;
};

}  // namespace conveyor::nn
