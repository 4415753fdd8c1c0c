// The CPU twin of Elementwise: the reference loops (elementwise_cpu.cpp), float32.
#pragma once

#include "src/train/layers/elementwise.h"

namespace conveyor::nn {

class ElementwiseCpu final : public Elementwise {
 public:
  void relu_forward(const Tensor& x, const Tensor& y) const override;
  void relu_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) const override;
  void mirror_width(const Tensor& x) const override;
  void copy_floats(const float* from, float* to, std::size_t count) const override;
  void average_into(float* x, const float* y, std::size_t count) const override;
  void convert_from_float(DType type, std::size_t count, const float* src, void* dst) const override;
};

}  // namespace conveyor::nn
