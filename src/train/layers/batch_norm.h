// The batch-normalization layer's interface (spatial, per channel), optionally followed by a residual add
// and a ReLU: y = relu(bn(x) + z). Its twins are the CPU reference (batch_norm_cpu.h) and the GPU
// (batch_norm_cudnn.h: cuDNN's fused *Ex kernels, with cuDNN's plain batch norm and our own kernels as
// fallbacks and as the unfused baseline); a Context makes the one of its backend.
#pragma once

#include <string>

#include "conveyor/train/nn/shape.h"
#include "src/train/layers/tensor.h"

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

// Throws InvalidArgument naming `name` for an empty shape, a residual add without ReLU, or epsilon or
// momentum out of range.
void check_batch_norm(const std::string& name, const Shape4& shape, const BatchNormOptions& options);

class BatchNorm {
 public:
  virtual ~BatchNorm() = default;
  BatchNorm(const BatchNorm&) = delete;
  BatchNorm& operator=(const BatchNorm&) = delete;

  const std::string& name() const noexcept { return name_; }
  const Shape4& shape() const noexcept { return shape_; }
  const BatchNormOptions& options() const noexcept { return options_; }

  // Allocates what the layer keeps between forward and backward (saved mean and 1/std; on a GPU cuDNN's
  // reserve space, workspace and scratch). GPU, fused: checks that cuDNN runs the fused configuration on
  // these buffers and falls back (cuDNN's plain batch norm plus our ReLU/add kernels, or our own kernels)
  // when cuDNN declines it; path() says which runs. The run writes the running statistics: restore them
  // afterwards if they matter.
  virtual void prepare(const Tensor& x, const Tensor* z, const Tensor& y, const Tensor& dy, const Tensor& dx,
                       const Tensor* dz, const BatchNormParams& params) = 0;
  // Training mode: normalizes with the batch statistics and updates the running ones.
  virtual void forward_training(const Tensor& x, const Tensor* z, const Tensor& y,
                                const BatchNormParams& params) = 0;
  // Inference mode: normalizes with the running statistics.
  virtual void forward_inference(const Tensor& x, const Tensor* z, const Tensor& y,
                                 const BatchNormParams& params) const = 0;
  // From dy (gradient of y) to dx, dz (= the gradient reaching z, when residual) and dgamma, dbeta.
  // y is the forward output (its sign gives the ReLU's mask). dy is not modified.
  virtual void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                        const Tensor* dz, const BatchNormParams& params) = 0;

  // "bn1 batch norm + ReLU: cuDNN fused (...)".
  std::string describe() const;
  // Which implementation runs: "CPU reference", or on a GPU the path prepare() settled on.
  virtual std::string path() const = 0;

 protected:
  BatchNorm(std::string name, Shape4 shape, BatchNormOptions options);

 private:
  std::string name_;
  Shape4 shape_;
  BatchNormOptions options_;
};

}  // namespace conveyor::nn
