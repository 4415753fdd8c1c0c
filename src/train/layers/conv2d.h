// The convolution layer's interface: forward, backward data and backward filter of one square
// convolution (no bias), with NHWC activations and KRSC filters. Its twins are the CPU reference
// (conv2d_cpu.h) and cuDNN (conv2d_cudnn.h); a Context makes the one of its backend. The layer owns the
// shape and whatever its backend chose at prepare(); weights and activations are passed in (a model keeps
// them in flat buffers).
#pragma once

#include <string>

#include "conveyor/train/nn/shape.h"
#include "src/train/layers/tensor.h"

namespace conveyor::nn {

// Throws InvalidArgument naming `name` when the geometry makes no output (or has no input).
void check_geometry(const std::string& name, const ConvGeometry& geometry);
// "layer1.0.conv1 3x3/1 64->64 on 56x56".
std::string describe_geometry(const std::string& name, const ConvGeometry& geometry);

class Conv2d {
 public:
  virtual ~Conv2d() = default;
  Conv2d(const Conv2d&) = delete;
  Conv2d& operator=(const Conv2d&) = delete;

  const std::string& name() const noexcept { return name_; }
  const ConvGeometry& geometry() const noexcept { return geometry_; }
  bool needs_input_grad() const noexcept { return needs_input_grad_; }
  Shape4 output_shape() const noexcept { return geometry_.output(); }
  std::size_t weight_count() const noexcept { return geometry_.weight_count(); }

  // GPU: the algorithm of each direction, chosen on these buffers (timed, heuristic, or from the algorithm
  // cache), and its workspace reserved; dx may be empty when the input needs no gradient. CPU: nothing.
  // Call Context::allocate_workspace() after every layer is prepared.
  virtual void prepare(const Tensor& x, const void* w, const Tensor& y, const Tensor& dx, void* dw) = 0;
  // y = conv(x, w)
  virtual void forward(const Tensor& x, const void* w, const Tensor& y) const = 0;
  // dx = conv^T(dy, w), or dx += ... with accumulate (a residual block's input gets two gradients).
  void backward_data(const Tensor& dy, const void* w, const Tensor& dx, bool accumulate) const;
  // dw = gradient of the filters (overwritten).
  virtual void backward_filter(const Tensor& x, const Tensor& dy, void* dw) const = 0;

  // "layer1.0.conv1 3x3/1 64->64 on 56x56", plus the algorithms a GPU chose and their times.
  std::string describe() const;

 protected:
  // needs_input_grad = false for a first layer: its backward_data is never called nor prepared for.
  Conv2d(std::string name, ConvGeometry geometry, bool needs_input_grad);

 private:
  virtual void run_backward_data(const Tensor& dy, const void* w, const Tensor& dx,
                                 bool accumulate) const = 0;
  // What describe() adds after the shape: empty on the CPU.
  virtual std::string algorithms() const { return {}; }

  std::string name_;
  ConvGeometry geometry_;
  bool needs_input_grad_;
};

}  // namespace conveyor::nn
