// Batch normalization layer (spatial, per channel), optionally followed by a residual add and a ReLU:
// y = relu(bn(x) + z). On a GPU the fused variant is cuDNN's
// cudnnBatchNormalizationForwardTrainingEx / BackwardEx with the add and ReLU folded in (NHWC,
// CUDNN_BATCHNORM_SPATIAL_PERSISTENT); the unfused variant runs separate mean, variance, normalize and
// ReLU kernels (ours), which is what the fused one is measured against.
#pragma once

#include <memory>
#include <string>

#include "conveyor/train/nn/shape.h"
#include "src/train/layers/context.h"

namespace conveyor::nn {

struct BatchNormOptions {
  bool relu = false;      // apply a ReLU after the normalization (and the add)
  bool residual = false;  // add a second input z before the ReLU (the end of a residual block)
  bool fused = true;      // GPU: cuDNN's fused kernels; false: separate kernels (the unfused baseline)
  double momentum = 0.1;  // running = (1 - momentum) * running + momentum * batch, as PyTorch
  double epsilon = 1e-5;
};

// The layer's float32 parameters and statistics, wherever the model keeps them.
struct BatchNormParams {
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
  float* dgamma = nullptr;  // written by backward()
  float* dbeta = nullptr;
};

class BatchNormCudnn;

class BatchNorm {
 public:
  BatchNorm(std::string name, Shape4 shape, BatchNormOptions options);
  ~BatchNorm();
  BatchNorm(BatchNorm&&) noexcept;
  BatchNorm& operator=(BatchNorm&&) noexcept;

  const std::string& name() const noexcept { return name_; }
  const Shape4& shape() const noexcept { return shape_; }
  const BatchNormOptions& options() const noexcept { return options_; }

  // Allocates what the layer keeps between forward and backward (saved mean and 1/std, cuDNN's reserve
  // space and workspace, scratch). GPU, fused: checks that cuDNN runs the fused configuration on these
  // buffers and falls back (cuDNN's plain batch norm plus our ReLU/add kernels, or our own kernels) when
  // cuDNN declines it; describe() says which path runs. The run writes the running statistics: restore
  // them afterwards if they matter.
  void prepare(Context& ctx, const Tensor& x, const Tensor* z, const Tensor& y, const Tensor& dy,
               const Tensor& dx, const Tensor* dz, const BatchNormParams& params);

  // Training mode: normalizes with the batch statistics and updates the running ones.
  void forward_training(Context& ctx, const Tensor& x, const Tensor* z, const Tensor& y,
                        const BatchNormParams& params);
  // Inference mode: normalizes with the running statistics.
  void forward_inference(Context& ctx, const Tensor& x, const Tensor* z, const Tensor& y,
                         const BatchNormParams& params) const;
  // From dy (gradient of y) to dx, dz (= the gradient reaching z, when residual) and dgamma, dbeta.
  // y is the forward output (its sign gives the ReLU's mask). dy is not modified.
  void backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const Tensor* dz, const BatchNormParams& params);

  std::string describe() const;
  // Which implementation runs: "CPU reference", or on a GPU the path prepare() settled on.
  std::string path() const;

 private:
  std::string name_;
  Shape4 shape_;
  BatchNormOptions options_;
  // CPU: statistics saved by the forward pass, and the gradient behind the ReLU.
  Buffer saved_mean_, saved_inv_std_, relu_grad_;
  std::unique_ptr<BatchNormCudnn> gpu_;
};

}  // namespace conveyor::nn
