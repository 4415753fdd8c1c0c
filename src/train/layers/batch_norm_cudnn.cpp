#include "src/train/layers/batch_norm_cudnn.h"

#include <algorithm>

#include "conveyor/error.h"
#include "src/train/layers/batch_norm_kernels.h"
#include "src/train/layers/kernels.h"

namespace conveyor::nn {
namespace {

constexpr float kOne = 1.f, kZero = 0.f;

}  // namespace

BatchNormCudnn::BatchNormCudnn(Context& ctx, std::string name, Shape4 shape, BatchNormOptions options)
    : name_(std::move(name)),
      shape_(shape),
      options_(options),
      dtype_(ctx.dtype()),
      path_(options.fused ? Path::fused : Path::own),
      x_desc_(make_nhwc_descriptor(shape, ctx.dtype(), name_)) {
  // Scale, shift, mean and variance are float32 (1 x C x 1 x 1) for every storage type.
  CONVEYOR_CUDNN(cudnnDeriveBNTensorDescriptor(param_desc_.get(), x_desc_.get(), CUDNN_BATCHNORM_SPATIAL),
                 name_);
  CONVEYOR_CUDNN(
      cudnnSetActivationDescriptor(relu_.get(), CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0), name_);
  const auto channel_bytes = static_cast<std::size_t>(shape.c) * sizeof(float);
  saved_mean_ = ctx.allocate(channel_bytes, name_ + " saved mean");
  saved_inv_std_ = ctx.allocate(channel_bytes, name_ + " saved 1/std");
}

bool BatchNormCudnn::allocate_fused(Context& ctx) {
  cudnnHandle_t h = ctx.cuda().cudnn();
  const auto ops = options_.residual ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION
                   : options_.relu   ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION
                                     : CUDNN_BATCHNORM_OPS_BN;
  const auto mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  cudnnActivationDescriptor_t act = options_.relu ? relu_.get() : nullptr;
  cudnnTensorDescriptor_t z = options_.residual ? x_desc_.get() : nullptr;
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
  CONVEYOR_CUDNN(s, name_ + " (sizing the fused batch norm's workspace)");
  workspace_ = ctx.allocate(std::max(forward_bytes, backward_bytes), name_ + " batch-norm workspace");
  reserve_ = ctx.allocate(reserve_bytes, name_ + " batch-norm reserve space");
  return true;
}

void BatchNormCudnn::prepare(Context& ctx, const Tensor& x, const Tensor* z, const Tensor& y,
                             const Tensor& dy, const Tensor& dx, const Tensor* dz,
                             const BatchNormParams& params) {
  if (path_ == Path::fused && !allocate_fused(ctx)) {
    declined_ = "the fused configuration's workspace query was declined";
    path_ = Path::cudnn_plain;
  }
  const bool needs_relu_grad = options_.relu && !options_.residual;
  while (true) {
    if (path_ != Path::fused) {
      workspace_ = Buffer(), reserve_ = Buffer();
      if (needs_relu_grad && !relu_grad_.data())
        relu_grad_ = ctx.allocate(shape_.count() * element_size(dtype_), name_ + " ReLU gradient");
    }
    if (path_ == Path::own) {
      const auto chunks = static_cast<std::size_t>(kernels::batch_norm_chunks(shape_.rows()));
      partials_ = ctx.allocate(2 * chunks * shape_.c * sizeof(float), name_ + " batch-norm partial sums");
      return;  // our kernels take every shape and type
    }
    // Run each direction once: cuDNN may decline a configuration only when it is executed.
    CudaContext& cuda = ctx.cuda();
    Status s = run_forward_training(cuda, x, z, y, params);
    if (s.status == CUDNN_STATUS_SUCCESS) s = run_backward(cuda, x, y, dy, dx, dz, params);
    if (s.status == CUDNN_STATUS_SUCCESS) s = run_forward_inference(cuda, x, z, y, params);
    if (s.status == CUDNN_STATUS_SUCCESS) return;
    // cuDNN declines a type or layout with NOT_SUPPORTED, and some versions with BAD_PARAM; our kernels
    // take every configuration, so both mean: fall back (describe() says why). Other failures are errors.
    if (!cuda::is_not_supported(s.status) && CUDNN_STATUS_CATEGORY(s.status) != CUDNN_STATUS_BAD_PARAM)
      check(s, "warm-up");
    declined_ = std::string(s.call) + ": " + cudnnGetErrorString(s.status);
    path_ = path_ == Path::fused ? Path::cudnn_plain : Path::own;
  }
}

BatchNormCudnn::Status BatchNormCudnn::run_forward_training(CudaContext& cuda, const Tensor& x,
                                                            const Tensor* z, const Tensor& y,
                                                            const BatchNormParams& p) {
  const std::size_t count = shape_.count();
  float* mean = saved_mean_.as<float>();
  float* inv_std = saved_inv_std_.as<float>();
  switch (path_) {
    case Path::fused: {
      const auto ops = options_.residual ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION
                       : options_.relu   ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION
                                         : CUDNN_BATCHNORM_OPS_BN;
      return {
          cudnnBatchNormalizationForwardTrainingEx(
              cuda.cudnn(), CUDNN_BATCHNORM_SPATIAL_PERSISTENT, ops, &kOne, &kZero, x_desc_.get(), x.data,
              options_.residual ? x_desc_.get() : nullptr, options_.residual ? z->data : nullptr,
              x_desc_.get(), y.data, param_desc_.get(), p.gamma, p.beta, options_.momentum, p.running_mean,
              p.running_var, options_.epsilon, mean, inv_std, options_.relu ? relu_.get() : nullptr,
              workspace_.data(), workspace_.bytes(), reserve_.data(), reserve_.bytes()),
          "cudnnBatchNormalizationForwardTrainingEx"};
    }
    case Path::cudnn_plain: {
      const Status s{cudnnBatchNormalizationForwardTraining(
                         cuda.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_desc_.get(), x.data,
                         x_desc_.get(), y.data, param_desc_.get(), p.gamma, p.beta, options_.momentum,
                         p.running_mean, p.running_var, options_.epsilon, mean, inv_std),
                     "cudnnBatchNormalizationForwardTraining"};
      if (s.status != CUDNN_STATUS_SUCCESS) return s;
      break;
    }
    case Path::own: {
      const std::size_t rows = shape_.rows();
      float* partials = partials_.as<float>();
      kernels::batch_norm_mean(dtype_, x.data, rows, shape_.c, partials, mean, cuda.stream(), name_);
      kernels::batch_norm_variance(dtype_, x.data, rows, shape_.c, mean, partials, options_.epsilon,
                                   options_.momentum, inv_std, p.running_mean, p.running_var, cuda.stream(),
                                   name_);
      kernels::batch_norm_normalize(dtype_, x.data, rows, shape_.c, mean, inv_std, p.gamma, p.beta, y.data,
                                    cuda.stream(), name_);
      break;
    }
  }
  if (options_.residual)
    kernels::add_relu_forward(dtype_, count, y.data, z->data, y.data, cuda.stream(), name_);
  else if (options_.relu)
    kernels::relu_forward(dtype_, count, y.data, y.data, cuda.stream(), name_);
  return {};
}

BatchNormCudnn::Status BatchNormCudnn::run_forward_inference(CudaContext& cuda, const Tensor& x,
                                                             const Tensor* z, const Tensor& y,
                                                             const BatchNormParams& p) const {
  if (path_ == Path::own) {
    kernels::batch_norm_inference(dtype_, x.data, shape_.rows(), shape_.c, p.gamma, p.beta, p.running_mean,
                                  p.running_var, options_.epsilon, options_.residual ? z->data : nullptr,
                                  options_.relu, y.data, cuda.stream(), name_);
    return {};
  }
  const Status s{cudnnBatchNormalizationForwardInference(cuda.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero,
                                                         x_desc_.get(), x.data, x_desc_.get(), y.data,
                                                         param_desc_.get(), p.gamma, p.beta, p.running_mean,
                                                         p.running_var, options_.epsilon),
                 "cudnnBatchNormalizationForwardInference"};
  if (s.status != CUDNN_STATUS_SUCCESS) return s;
  if (options_.residual)
    kernels::add_relu_forward(dtype_, shape_.count(), y.data, z->data, y.data, cuda.stream(), name_);
  else if (options_.relu)
    kernels::relu_forward(dtype_, shape_.count(), y.data, y.data, cuda.stream(), name_);
  return s;
}

BatchNormCudnn::Status BatchNormCudnn::run_backward(CudaContext& cuda, const Tensor& x, const Tensor& y,
                                                    const Tensor& dy, const Tensor& dx, const Tensor* dz,
                                                    const BatchNormParams& p) {
  const float* mean = saved_mean_.as<const float>();
  const float* inv_std = saved_inv_std_.as<const float>();
  if (path_ == Path::fused) {
    const auto ops = options_.residual ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION
                     : options_.relu   ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION
                                       : CUDNN_BATCHNORM_OPS_BN;
    return {cudnnBatchNormalizationBackwardEx(
                cuda.cudnn(), CUDNN_BATCHNORM_SPATIAL_PERSISTENT, ops, &kOne, &kZero, &kOne, &kZero,
                x_desc_.get(), x.data, x_desc_.get(), y.data, x_desc_.get(), dy.data,
                options_.residual ? x_desc_.get() : nullptr, options_.residual ? dz->data : nullptr,
                x_desc_.get(), dx.data, param_desc_.get(), p.gamma, p.beta, p.dgamma, p.dbeta,
                options_.epsilon, mean, inv_std, options_.relu ? relu_.get() : nullptr, workspace_.data(),
                workspace_.bytes(), reserve_.data(), reserve_.bytes()),
            "cudnnBatchNormalizationBackwardEx"};
  }
  const void* grad = dy.data;
  if (options_.relu) {
    // The gradient behind the ReLU is also the gradient reaching the residual input z.
    void* masked = options_.residual ? dz->data : relu_grad_.data();
    kernels::relu_backward(dtype_, shape_.count(), y.data, dy.data, masked, cuda.stream(), name_);
    grad = masked;
  }
  if (path_ == Path::cudnn_plain)
    return {cudnnBatchNormalizationBackward(cuda.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne,
                                            &kZero, x_desc_.get(), x.data, x_desc_.get(), grad, x_desc_.get(),
                                            dx.data, param_desc_.get(), p.gamma, p.dgamma, p.dbeta,
                                            options_.epsilon, mean, inv_std),
            "cudnnBatchNormalizationBackward"};
  const std::size_t rows = shape_.rows();
  kernels::batch_norm_backward_reduce(dtype_, x.data, grad, rows, shape_.c, mean, inv_std,
                                      partials_.as<float>(), p.dgamma, p.dbeta, cuda.stream(), name_);
  kernels::batch_norm_backward_data(dtype_, x.data, grad, rows, shape_.c, mean, inv_std, p.gamma, p.dgamma,
                                    p.dbeta, dx.data, cuda.stream(), name_);
  return {};
}

void BatchNormCudnn::check(const Status& s, const char* direction) const {
  cuda::check(s.status, s.call, name_ + " (batch norm " + direction + ")", __FILE__, __LINE__);
}

void BatchNormCudnn::forward_training(CudaContext& cuda, const Tensor& x, const Tensor* z, const Tensor& y,
                                      const BatchNormParams& params) {
  check(run_forward_training(cuda, x, z, y, params), "forward");
}

void BatchNormCudnn::forward_inference(CudaContext& cuda, const Tensor& x, const Tensor* z, const Tensor& y,
                                       const BatchNormParams& params) const {
  check(run_forward_inference(cuda, x, z, y, params), "inference");
}

void BatchNormCudnn::backward(CudaContext& cuda, const Tensor& x, const Tensor& y, const Tensor& dy,
                              const Tensor& dx, const Tensor* dz, const BatchNormParams& params) {
  check(run_backward(cuda, x, y, dy, dx, dz, params), "backward");
}

std::string BatchNormCudnn::describe() const {
  switch (path_) {
    case Path::fused:
      return "cuDNN fused (BatchNormalization*Ex, NHWC persistent)";
    case Path::cudnn_plain:
      return "cuDNN batch norm + our ReLU/add kernels (fused declined: " + declined_ + ")";
    case Path::own:
      break;
  }
  return options_.fused ? "our batch-norm kernels (cuDNN declined: " + declined_ + ")"
                        : "unfused: separate mean, variance, normalize and ReLU kernels";
}

}  // namespace conveyor::nn
