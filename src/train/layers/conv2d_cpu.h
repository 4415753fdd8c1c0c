// The CPU twin of Conv2d: the reference loops (conv2d_cpu.cpp), float32, nothing to prepare.
#pragma once

#include "src/train/layers/conv2d.h"

namespace conveyor::nn {

class Conv2dCpu final : public Conv2d {
 public:
  Conv2dCpu(std::string name, ConvGeometry geometry, bool needs_input_grad)
      : Conv2d(std::move(name), geometry, needs_input_grad) {}

  void prepare(const Tensor&, const void*, const Tensor&, const Tensor&, void*) override {}
  void forward(const Tensor& x, const void* w, const Tensor& y) const override;
  void backward_filter(const Tensor& x, const Tensor& dy, void* dw) const override;

 private:
  void run_backward_data(const Tensor& dy, const void* w, const Tensor& dx, bool accumulate) const override;
};

}  // namespace conveyor::nn
