// The CPU twin of BatchNorm: the reference loops (batch_norm_cpu.cpp), float32, with the ReLU and the
// residual add as separate passes; keeps the batch's mean and 1/std for the backward pass.
#pragma once

#include "src/train/layers/batch_norm.h"
#include "src/train/layers/buffer.h"

namespace conveyor::nn {

class Context;

class BatchNormCpu final : public BatchNorm {
 public:
  BatchNormCpu(Context& ctx, std::string name, Shape4 shape, BatchNormOptions options)
      : BatchNorm(std::move(name), shape, options), ctx_(ctx) {}

  void prepare(const Tensor& x, const Tensor* z, const Tensor& y, const Tensor& dy, const Tensor& dx,
               const Tensor* dz, const BatchNormParams& params) override;
  void forward_training(const Tensor& x, const Tensor* z, const Tensor& y,
                        const BatchNormParams& params) override;
  void forward_inference(const Tensor& x, const Tensor* z, const Tensor& y,
                         const BatchNormParams& params) const override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const Tensor* dz,
                const BatchNormParams& params) override;
  std::string path() const override { return "CPU reference"; }

 private:
  Context& ctx_;
  // Statistics saved by the forward pass, and the gradient behind the ReLU.
  Buffer saved_mean_, saved_inv_std_, relu_grad_;
};

}  // namespace conveyor::nn
