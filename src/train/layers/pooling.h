// Pooling layers: max and average over a square window, and global average pooling (the window is the
// whole image), on the CPU reference or on cuDNN.
#pragma once

#include <memory>
#include <string>

#include "conveyor/train/nn/shape.h"
#include "src/train/layers/context.h"

namespace conveyor::nn {

enum class PoolMode { max, average };

class PoolCudnn;

class Pool2d {
 public:
  Pool2d(std::string name, PoolGeometry geometry, PoolMode mode);
  // Average over all of h x w: n x h x w x c to n x 1 x 1 x c (which is also an n x c matrix).
  static Pool2d global_average(std::string name, Shape4 input);
  ~Pool2d();
  Pool2d(Pool2d&&) noexcept;
  Pool2d& operator=(Pool2d&&) noexcept;

  const std::string& name() const noexcept { return name_; }
  Shape4 output_shape() const noexcept;

  // GPU: the cuDNN descriptors. CPU: nothing.
  void prepare(Context& ctx);
  void forward(Context& ctx, const Tensor& x, const Tensor& y) const;
  // dx (overwritten) from dy; x and y are the forward pass's input and output (max pooling needs them).
  void backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) const;

 private:
  std::string name_;
  PoolGeometry geometry_;
  PoolMode mode_;
  bool global_ = false;
  std::unique_ptr<PoolCudnn> gpu_;
};

}  // namespace conveyor::nn
