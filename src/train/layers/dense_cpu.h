// The CPU twin of Dense: the reference loops (dense_cpu.cpp), float32.
#pragma once

#include "src/train/layers/dense.h"

namespace conveyor::nn {

class DenseCpu final : public Dense {
 public:
  DenseCpu(std::string name, int batch, int in_features, int out_features)
      : Dense(std::move(name), batch, in_features, out_features) {}

  void forward(const Tensor& x, const void* w, const float* bias, float* logits) const override;
  void backward_data(const void* dy, const void* w, const Tensor& dx) const override;
  void backward_weights(const Tensor& x, const void* dy, void* dw, float* dbias) const override;
};

}  // namespace conveyor::nn
