#include "src/train/layers/batch_norm_cudnn.h"

#include <algorithm>

#include "conveyor/error.h"
#include "src/train/layers/batch_norm_kernels.h"
#include "src/train/layers/kernels.h"

namespace conveyor::nn {
namespace {

constexpr float kOne = 1.f, kZero = 0.f;

}  // namespace

BatchNormCudnn::BatchNormCudnn(CudaContext& cuda, std::string name, Shape4 shape, BatchNormOptions options)
    : BatchNorm(std::move(name), shape, options),
      cuda_(cuda),
      dtype_(cuda_.dtype()),
      path_(options.fused ? Path::fused : Path::own),
      x_desc_(make_nhwc_descriptor(shape, cuda_.dtype(), this->name())) {
  // Scale, shift, mean and variance are float32 (1 x C x 1 x 1) for every storage type.
  CONVEYOR_CUDNN(cudnnDeriveBNTensorDescriptor(param_desc_.get(), x_desc_.get(), CUDNN_BATCHNORM_SPATIAL),
                 this->name());
  CONVEYOR_CUDNN(
      cudnnSetActivationDescriptor(relu_.get(), CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
      this->name());
  const auto channel_bytes = static_cast<std::size_t>(shape.c) * sizeof(float);
  saved_mean_ = cuda_.allocate(channel_bytes, this->name() + " saved mean");
  saved_inv_std_ = cuda_.allocate(channel_bytes, this->name() + " saved 1/std");
}

bool BatchNormCudnn::allocate_fused() {
  cudnnHandle_t h = cuda_.cudnn();
  const auto ops = options().residual ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION
                   : options().relu   ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION
                                      : CUDNN_BATCHNORM_OPS_BN;
  const auto mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  cudnnActivationDescriptor_t act = options().relu ? relu_.get() : nullptr;
  cudnnTensorDescriptor_t z = options().residual ? x_desc_.get() : nullptr;
  std::size_t forward_bytes = 0, backward_bytes = 0, reserve_bytes = 0;
  cudnnStatus_t s = cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
      h, mode, ops, x_desc_.get(), z, x_desc_.get(), param_desc_.get(), act, &forward_bytes);
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnGetBatchNormalizationBackwardExWorkspaceSize(h, mode, ops, x_desc_.get(), x_desc_.get(),
                                                          x_desc_.get(), z, x_desc_.get(), param_desc_.get(),
                                                          act, &backward_bytes);
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnGetBatchNormalizationTrainingExReserveSpaceSize(h, mode, ops, act, x_desc_.get(),
                                                             &reserve_bytes);
  if (cuda::is_not_supported(s) || CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_BAD_PARAM) return false;
  CONVEYOR_CUDNN(s, name() + " (sizing the fused batch norm's workspace)");
  workspace_ = cuda_.allocate(std::max(forward_bytes, backward_bytes), name() + " batch-norm workspace");
  reserve_ = cuda_.allocate(reserve_bytes, name() + " batch-norm reserve space");
  return true;
}

void BatchNormCudnn::prepare(const Tensor& x, const Tensor* z, const Tensor& y, const Tensor& dy,
                             const Tensor& dx, const Tensor* dz, const BatchNormParams& params) {
  if (path_ == Path::fused && !allocate_fused()) {
    declined_ = "the fused configuration's workspace query was declined";
    path_ = Path::cudnn_plain;
  }
  const bool needs_relu_grad = options().relu && !options().residual;
  while (true) {
    if (path_ != Path::fused) {
      workspace_ = Buffer(), reserve_ = Buffer();
      if (needs_relu_grad && !relu_grad_.data())
        relu_grad_ = cuda_.allocate(shape().count() * element_size(dtype_), name() + " ReLU gradient");
    }
    if (path_ == Path::own) {
      const auto chunks = static_cast<std::size_t>(kernels::batch_norm_chunks(shape().rows()));
      partials_ = cuda_.allocate(2 * chunks * shape().c * sizeof(float), name() + " batch-norm partial sums");
      return;  // our kernels take every shape and type
    }
    // Run each direction once: cuDNN may decline a configuration only when it is executed.
    Status s = run_forward_training(x, z, y, params);
    if (s.status == CUDNN_STATUS_SUCCESS) s = run_backward(x, y, dy, dx, dz, params);
    if (s.status == CUDNN_STATUS_SUCCESS) s = run_forward_inference(x, z, y, params);
    if (s.status == CUDNN_STATUS_SUCCESS) return;
    // cuDNN declines a type or layout with NOT_SUPPORTED, and some versions with BAD_PARAM; our kernels
    // take every configuration, so both mean: fall back (describe() says why). Other failures are errors.
    if (!cuda::is_not_supported(s.status) && CUDNN_STATUS_CATEGORY(s.status) != CUDNN_STATUS_BAD_PARAM)
      check(s, "warm-up");
    declined_ = std::string(s.call) + ": " + cudnnGetErrorString(s.status);
    path_ = path_ == Path::fused ? Path::cudnn_plain : Path::own;
  }
}

BatchNormCudnn::Status BatchNormCudnn::run_forward_training(const Tensor& x, const Tensor* z, const Tensor& y,
                                                            const BatchNormParams& p) {
  const std::size_t count = shape().count();
  float* mean = saved_mean_.as<float>();
  float* inv_std = saved_inv_std_.as<float>();
  switch (path_) {
    case Path::fused: {
      const auto ops = options().residual ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION
                       : options().relu   ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION
                                          : CUDNN_BATCHNORM_OPS_BN;
      return {
          cudnnBatchNormalizationForwardTrainingEx(
              cuda_.cudnn(), CUDNN_BATCHNORM_SPATIAL_PERSISTENT, ops, &kOne, &kZero, x_desc_.get(), x.data,
              options().residual ? x_desc_.get() : nullptr, options().residual ? z->data : nullptr,
              x_desc_.get(), y.data, param_desc_.get(), p.gamma, p.beta, options().momentum, p.running_mean,
              p.running_var, options().epsilon, mean, inv_std, options().relu ? relu_.get() : nullptr,
              workspace_.data(), workspace_.bytes(), reserve_.data(), reserve_.bytes()),
          "cudnnBatchNormalizationForwardTrainingEx"};
    }
    case Path::cudnn_plain: {
      const Status s{cudnnBatchNormalizationForwardTraining(
                         cuda_.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_desc_.get(), x.data,
                         x_desc_.get(), y.data, param_desc_.get(), p.gamma, p.beta, options().momentum,
                         p.running_mean, p.running_var, options().epsilon, mean, inv_std),
                     "cudnnBatchNormalizationForwardTraining"};
      if (s.status != CUDNN_STATUS_SUCCESS) return s;
      break;
    }
    case Path::own: {
      const std::size_t rows = shape().rows();
      float* partials = partials_.as<float>();
      kernels::batch_norm_mean(dtype_, x.data, rows, shape().c, partials, mean, cuda_.stream(), name());
      kernels::batch_norm_variance(dtype_, x.data, rows, shape().c, mean, partials, options().epsilon,
                                   options().momentum, inv_std, p.running_mean, p.running_var, cuda_.stream(),
                                   name());
      kernels::batch_norm_normalize(dtype_, x.data, rows, shape().c, mean, inv_std, p.gamma, p.beta, y.data,
                                    cuda_.stream(), name());
      break;
    }
  }
  if (options().residual)
    kernels::add_relu_forward(dtype_, count, y.data, z->data, y.data, cuda_.stream(), name());
  else if (options().relu)
    kernels::relu_forward(dtype_, count, y.data, y.data, cuda_.stream(), name());
  return {};
}

BatchNormCudnn::Status BatchNormCudnn::run_forward_inference(const Tensor& x, const Tensor* z,
                                                             const Tensor& y,
                                                             const BatchNormParams& p) const {
  if (path_ == Path::own) {
    kernels::batch_norm_inference(dtype_, x.data, shape().rows(), shape().c, p.gamma, p.beta, p.running_mean,
                                  p.running_var, options().epsilon, options().residual ? z->data : nullptr,
                                  options().relu, y.data, cuda_.stream(), name());
    return {};
  }
  const Status s{cudnnBatchNormalizationForwardInference(cuda_.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne,
                                                         &kZero, x_desc_.get(), x.data, x_desc_.get(), y.data,
                                                         param_desc_.get(), p.gamma, p.beta, p.running_mean,
                                                         p.running_var, options().epsilon),
                 "cudnnBatchNormalizationForwardInference"};
  if (s.status != CUDNN_STATUS_SUCCESS) return s;
  if (options().residual)
    kernels::add_relu_forward(dtype_, shape().count(), y.data, z->data, y.data, cuda_.stream(), name());
  else if (options().relu)
    kernels::relu_forward(dtype_, shape().count(), y.data, y.data, cuda_.stream(), name());
  return s;
}

BatchNormCudnn::Status BatchNormCudnn::run_backward(const Tensor& x, const Tensor& y, const Tensor& dy,
                                                    const Tensor& dx, const Tensor* dz,
                                                    const BatchNormParams& p) {
  const float* mean = saved_mean_.as<const float>();
  const float* inv_std = saved_inv_std_.as<const float>();
  if (path_ == Path::fused) {
    const auto ops = options().residual ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION
                     : options().relu   ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION
                                        : CUDNN_BATCHNORM_OPS_BN;
    return {cudnnBatchNormalizationBackwardEx(
                cuda_.cudnn(), CUDNN_BATCHNORM_SPATIAL_PERSISTENT, ops, &kOne, &kZero, &kOne, &kZero,
                x_desc_.get(), x.data, x_desc_.get(), y.data, x_desc_.get(), dy.data,
                options().residual ? x_desc_.get() : nullptr, options().residual ? dz->data : nullptr,
                x_desc_.get(), dx.data, param_desc_.get(), p.gamma, p.beta, p.dgamma, p.dbeta,
                options().epsilon, mean, inv_std, options().relu ? relu_.get() : nullptr, workspace_.data(),
                workspace_.bytes(), reserve_.data(), reserve_.bytes()),
            "cudnnBatchNormalizationBackwardEx"};
  }
  const void* grad = dy.data;
  if (options().relu) {
    // The gradient behind the ReLU is also the gradient reaching the residual input z.
    void* masked = options().residual ? dz->data : relu_grad_.data();
    kernels::relu_backward(dtype_, shape().count(), y.data, dy.data, masked, cuda_.stream(), name());
    grad = masked;
  }
  if (path_ == Path::cudnn_plain)
    return {cudnnBatchNormalizationBackward(cuda_.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne,
                                            &kZero, x_desc_.get(), x.data, x_desc_.get(), grad, x_desc_.get(),
                                            dx.data, param_desc_.get(), p.gamma, p.dgamma, p.dbeta,
                                            options().epsilon, mean, inv_std),
            "cudnnBatchNormalizationBackward"};
  const std::size_t rows = shape().rows();
  kernels::batch_norm_backward_reduce(dtype_, x.data, grad, rows, shape().c, mean, inv_std,
                                      partials_.as<float>(), p.dgamma, p.dbeta, cuda_.stream(), name());
  kernels::batch_norm_backward_data(dtype_, x.data, grad, rows, shape().c, mean, inv_std, p.gamma, p.dgamma,
                                    p.dbeta, dx.data, cuda_.stream(), name());
  return {};
}

void BatchNormCudnn::check(const Status& s, const char* direction) const {
  cuda::check(s.status, s.call, name() + " (batch norm " + direction + ")", __FILE__, __LINE__);
}

void BatchNormCudnn::forward_training(const Tensor& x, const Tensor* z, const Tensor& y,
                                      const BatchNormParams& params) {
  check(run_forward_training(x, z, y, params), "forward");
}

void BatchNormCudnn::forward_inference(const Tensor& x, const Tensor* z, const Tensor& y,
                                       const BatchNormParams& params) const {
  check(run_forward_inference(x, z, y, params), "inference");
}

void BatchNormCudnn::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                              const Tensor* dz, const BatchNormParams& params) {
  check(run_backward(x, y, dy, dx, dz, params), "backward");
}

std::string BatchNormCudnn::path() const {
  switch (path_) {
    case Path::fused:
      return "cuDNN fused (BatchNormalization*Ex, NHWC persistent)";
    case Path::cudnn_plain:
      return "cuDNN batch norm + our ReLU/add kernels (fused declined: " + declined_ + ")";
    case Path::own:
      break;
  }
  return options().fused ? "our batch-norm kernels (cuDNN declined: " + declined_ + ")"
                         : "unfused: separate mean, variance, normalize and ReLU kernels";
}

}  // namespace conveyor::nn
