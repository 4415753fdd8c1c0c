// The cuBLAS twin of Dense: the products on cublasGemmEx (16-bit or fp32 inputs, fp32 accumulation), the
// bias and its gradient on our kernels.
#pragma once

#include "src/train/layers/cuda_context.h"
#include "src/train/layers/dense.h"

namespace conveyor::nn {

class DenseCublas final : public Dense {
 public:
  DenseCublas(CudaContext& cuda, std::string name, int batch, int in_features, int out_features)
      : Dense(std::move(name), batch, in_features, out_features), cuda_(cuda) {}

  void forward(const Tensor& x, const void* w, const float* bias, float* logits) const override;
  void backward_data(const void* dy, const void* w, const Tensor& dx) const override;
  void backward_weights(const Tensor& x, const void* dy, void* dw, float* dbias) const override;

 private:
  CudaContext& cuda_;
};

}  // namespace conveyor::nn
