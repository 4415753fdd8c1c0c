#include "src/train/layers/batch_norm.h"

#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"

#ifdef CONVEYOR_HAVE_CUDA
#include "src/train/layers/batch_norm_cudnn.h"
#else
namespace conveyor::nn {
class BatchNormCudnn {};  // never created without CUDA
}  // namespace conveyor::nn
#endif

namespace conveyor::nn {

BatchNorm::BatchNorm(std::string name, Shape4 shape, BatchNormOptions options)
    : name_(std::move(name)), shape_(shape), options_(options) {
  if (shape.count() == 0) throw InvalidArgument(name_ + ": empty batch-norm shape");
  if (options.residual && !options.relu)
    throw InvalidArgument(name_ + ": a residual add is only supported before a ReLU");
  if (!(options.epsilon > 0) || options.momentum < 0 || options.momentum > 1)
    throw InvalidArgument(name_ + ": epsilon must be positive and momentum in [0, 1]");
}

BatchNorm::~BatchNorm() = default;
BatchNorm::BatchNorm(BatchNorm&&) noexcept = default;
BatchNorm& BatchNorm::operator=(BatchNorm&&) noexcept = default;

void BatchNorm::prepare(Context& ctx, const Tensor& x, const Tensor* z, const Tensor& y, const Tensor& dy,
                        const Tensor& dx, const Tensor* dz, const BatchNormParams& params) {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) {
    gpu_ = std::make_unique<BatchNormCudnn>(ctx, name_, shape_, options_);
    gpu_->prepare(ctx, x, z, y, dy, dx, dz, params);
    return;
  }
#endif
  (void)x, (void)z, (void)y, (void)dy, (void)dx, (void)dz, (void)params;
  const auto channel_bytes = static_cast<std::size_t>(shape_.c) * sizeof(float);
  saved_mean_ = ctx.allocate(channel_bytes, name_ + " saved mean");
  saved_inv_std_ = ctx.allocate(channel_bytes, name_ + " saved 1/std");
  if (options_.relu && !options_.residual)
    relu_grad_ = ctx.allocate(shape_.count() * sizeof(float), name_ + " ReLU gradient");
}

void BatchNorm::forward_training(Context& ctx, const Tensor& x, const Tensor* z, const Tensor& y,
                                 const BatchNormParams& p) {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) return gpu_->forward_training(ctx.cuda(), x, z, y, p);
#endif
  (void)ctx;
  if (!saved_mean_.data()) throw InvalidArgument(name_ + ": prepare() the layer before running it");
  float* out = y.as<float>();
  cpu::batch_norm_forward_training(shape_, x.as<const float>(), p.gamma, p.beta, options_.momentum,
                                   options_.epsilon, out, saved_mean_.as<float>(), saved_inv_std_.as<float>(),
                                   p.running_mean, p.running_var);
  if (options_.residual)
    cpu::add_relu_forward(shape_.count(), out, z->as<const float>(), out);
  else if (options_.relu)
    cpu::relu_forward(shape_.count(), out, out);
}

void BatchNorm::forward_inference(Context& ctx, const Tensor& x, const Tensor* z, const Tensor& y,
                                  const BatchNormParams& p) const {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) return gpu_->forward_inference(ctx.cuda(), x, z, y, p);
#endif
  (void)ctx;
  float* out = y.as<float>();
  cpu::batch_norm_forward_inference(shape_, x.as<const float>(), p.gamma, p.beta, p.running_mean,
                                    p.running_var, options_.epsilon, out);
  if (options_.residual)
    cpu::add_relu_forward(shape_.count(), out, z->as<const float>(), out);
  else if (options_.relu)
    cpu::relu_forward(shape_.count(), out, out);
}

void BatchNorm::backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                         const Tensor* dz, const BatchNormParams& p) {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) return gpu_->backward(ctx.cuda(), x, y, dy, dx, dz, p);
#endif
  (void)ctx;
  const float* grad = dy.as<const float>();
  if (options_.relu) {
    // The gradient behind the ReLU is also the gradient reaching the residual input z.
    float* masked = options_.residual ? dz->as<float>() : relu_grad_.as<float>();
    cpu::relu_backward(shape_.count(), y.as<const float>(), grad, masked);
    grad = masked;
  }
  cpu::batch_norm_backward(shape_, x.as<const float>(), grad, p.gamma, saved_mean_.as<const float>(),
                           saved_inv_std_.as<const float>(), dx.as<float>(), p.dgamma, p.dbeta);
}

std::string BatchNorm::describe() const {
  return name_ + " batch norm" + (options_.residual ? " + add" : "") + (options_.relu ? " + ReLU" : "") +
         ": " + path();
}

std::string BatchNorm::path() const {
#ifdef CONVEYOR_HAVE_CUDA
  if (gpu_) return gpu_->describe();
#endif
  return "CPU reference";
}

}  // namespace conveyor::nn
