// The CPU twin of Pool2d: the reference loops (pooling_cpu.cpp), float32.
#pragma once

#include "src/train/layers/pooling.h"

namespace conveyor::nn {

class Pool2dCpu final : public Pool2d {
 public:
  Pool2dCpu(std::string name, PoolGeometry geometry, PoolMode mode, bool global)
      : Pool2d(std::move(name), geometry, mode, global) {}

  void forward(const Tensor& x, const Tensor& y) const override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) const override;
};

}  // namespace conveyor::nn
