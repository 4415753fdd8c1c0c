// The pooling layer's interface: max or average over a square window, or global average pooling (the
// window is the whole image). Its twins are the CPU reference (pooling_cpu.h) and cuDNN (pooling_cudnn.h);
// a Context makes the one of its backend.
#pragma once

#include <string>

#include "conveyor/train/nn/shape.h"
#include "src/train/layers/tensor.h"

namespace conveyor::nn {

enum class PoolMode { max, average };

// Throws InvalidArgument naming `name` when the window, stride or padding are invalid (padding must be
// smaller than the window) or make no output.
void check_geometry(const std::string& name, const PoolGeometry& geometry);

class Pool2d {
 public:
  virtual ~Pool2d() = default;
  Pool2d(const Pool2d&) = delete;
  Pool2d& operator=(const Pool2d&) = delete;

  const std::string& name() const noexcept { return name_; }
  const PoolGeometry& geometry() const noexcept { return geometry_; }
  PoolMode mode() const noexcept { return mode_; }
  bool global() const noexcept { return global_; }
  // n x h x w x c to n x 1 x 1 x c for global pooling (which is also an n x c matrix).
  Shape4 output_shape() const noexcept;

  virtual void forward(const Tensor& x, const Tensor& y) const = 0;
  // dx (overwritten) from dy; x and y are the forward pass's input and output (max pooling needs them).
  virtual void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) const = 0;

 protected:
  // A window over `geometry`; global: the average over all of geometry.input's h x w (window ignored).
  Pool2d(std::string name, PoolGeometry geometry, PoolMode mode, bool global);

 private:
  std::string name_;
  PoolGeometry geometry_;
  PoolMode mode_;
  bool global_;
};

}  // namespace conveyor::nn
