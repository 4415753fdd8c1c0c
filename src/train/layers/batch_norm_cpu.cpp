// CPU reference batch normalization (spatial: one mean and variance per channel over n*h*w), and the CPU
// twin of the BatchNorm layer over it. Statistics are accumulated in double over a fixed chunking (see
// cpu_parallel.h).
#include "src/train/layers/batch_norm_cpu.h"

#include <cmath>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"
#include "src/train/layers/context.h"
#include "src/train/layers/cpu_parallel.h"

namespace conveyor::nn::cpu {

template <class T>
void batch_norm_forward_training(const Shape4& s, const T* x, const T* gamma, const T* beta, double momentum,
                                 double epsilon, T* y, T* saved_mean, T* saved_inv_std, T* running_mean,
                                 T* running_var) {
  const std::size_t rows = s.rows();
  const int C = s.c;
  // Two passes (mean, then squared deviations) rather than sum and sum of squares: no cancellation.
  const std::vector<double> sums = channel_sums(rows, C, [&](std::size_t row, double* acc) {
    const T* xr = x + row * C;
    for (int c = 0; c < C; ++c) acc[c] += xr[c];
  });
  std::vector<double> mean(C);
  for (int c = 0; c < C; ++c) mean[c] = sums[c] / static_cast<double>(rows);
  const std::vector<double> squares = channel_sums(rows, C, [&](std::size_t row, double* acc) {
    const T* xr = x + row * C;
    for (int c = 0; c < C; ++c) {
      const double d = xr[c] - mean[c];
      acc[c] += d * d;
    }
  });
  std::vector<T> scale(C), shift(C);
  for (int c = 0; c < C; ++c) {
    const double var = squares[c] / static_cast<double>(rows);
    const double inv_std = 1.0 / std::sqrt(var + epsilon);
    saved_mean[c] = static_cast<T>(mean[c]);
    saved_inv_std[c] = static_cast<T>(inv_std);
    scale[c] = static_cast<T>(gamma[c] * inv_std);
    shift[c] = static_cast<T>(beta[c] - mean[c] * gamma[c] * inv_std);
    if (running_mean && running_var) {
      const double unbiased =
          rows > 1 ? var * static_cast<double>(rows) / static_cast<double>(rows - 1) : var;
      running_mean[c] = static_cast<T>((1.0 - momentum) * running_mean[c] + momentum * mean[c]);
      running_var[c] = static_cast<T>((1.0 - momentum) * running_var[c] + momentum * unbiased);
    }
  }
  parallel_ranges(rows, 256, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row)
      for (int c = 0; c < C; ++c) y[row * C + c] = x[row * C + c] * scale[c] + shift[c];
  });
}

template <class T>
void batch_norm_forward_inference(const Shape4& s, const T* x, const T* gamma, const T* beta, const T* mean,
                                  const T* var, double epsilon, T* y) {
  const int C = s.c;
  std::vector<T> scale(C), shift(C);
  for (int c = 0; c < C; ++c) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(var[c]) + epsilon);
    scale[c] = static_cast<T>(gamma[c] * inv_std);
    shift[c] = static_cast<T>(beta[c] - mean[c] * gamma[c] * inv_std);
  }
  parallel_ranges(s.rows(), 256, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row)
      for (int c = 0; c < C; ++c) y[row * C + c] = x[row * C + c] * scale[c] + shift[c];
  });
}

template <class T>
void batch_norm_backward(const Shape4& s, const T* x, const T* dy, const T* gamma, const T* saved_mean,
                         const T* saved_inv_std, T* dx, T* dgamma, T* dbeta) {
  const std::size_t rows = s.rows();
  const int C = s.c;
  // dbeta = sum dy, dgamma = sum dy * xhat; then
  // dx = gamma * inv_std * (dy - dbeta / m - xhat * dgamma / m).
  const std::vector<double> sums = channel_sums(rows, 2 * C, [&](std::size_t row, double* acc) {
    const T* xr = x + row * C;
    const T* gr = dy + row * C;
    for (int c = 0; c < C; ++c) {
      const double xhat = (static_cast<double>(xr[c]) - saved_mean[c]) * saved_inv_std[c];
      acc[c] += gr[c];
      acc[C + c] += gr[c] * xhat;
    }
  });
  const double m = static_cast<double>(rows);
  std::vector<double> k_scale(C), k_mean_dy(C), k_dgamma(C);
  for (int c = 0; c < C; ++c) {
    dbeta[c] = static_cast<T>(sums[c]);
    dgamma[c] = static_cast<T>(sums[C + c]);
    k_scale[c] = static_cast<double>(gamma[c]) * saved_inv_std[c];
    k_mean_dy[c] = sums[c] / m;
    k_dgamma[c] = sums[C + c] / m;
  }
  parallel_ranges(rows, 256, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row)
      for (int c = 0; c < C; ++c) {
        const double xhat = (static_cast<double>(x[row * C + c]) - saved_mean[c]) * saved_inv_std[c];
        dx[row * C + c] = static_cast<T>(k_scale[c] * (dy[row * C + c] - k_mean_dy[c] - xhat * k_dgamma[c]));
      }
  });
}

#define CONVEYOR_INSTANTIATE(T)                                                                             \
  template void batch_norm_forward_training<T>(const Shape4&, const T*, const T*, const T*, double, double, \
                                               T*, T*, T*, T*, T*);                                         \
  template void batch_norm_forward_inference<T>(const Shape4&, const T*, const T*, const T*, const T*,      \
                                                const T*, double, T*);                                      \
  template void batch_norm_backward<T>(const Shape4&, const T*, const T*, const T*, const T*, const T*, T*, \
                                       T*, T*);
CONVEYOR_INSTANTIATE(float)
CONVEYOR_INSTANTIATE(double)
#undef CONVEYOR_INSTANTIATE

}  // namespace conveyor::nn::cpu

namespace conveyor::nn {

void BatchNormCpu::prepare(const Tensor&, const Tensor*, const Tensor&, const Tensor&, const Tensor&,
                           const Tensor*, const BatchNormParams&) {
  const auto channel_bytes = static_cast<std::size_t>(shape().c) * sizeof(float);
  saved_mean_ = ctx_.allocate(channel_bytes, name() + " saved mean");
  saved_inv_std_ = ctx_.allocate(channel_bytes, name() + " saved 1/std");
  if (options().relu && !options().residual)
    relu_grad_ = ctx_.allocate(shape().count() * sizeof(float), name() + " ReLU gradient");
}

void BatchNormCpu::forward_training(const Tensor& x, const Tensor* z, const Tensor& y,
                                    const BatchNormParams& p) {
  if (!saved_mean_.data()) throw InvalidArgument(name() + ": prepare() the layer before running it");
  float* out = y.as<float>();
  cpu::batch_norm_forward_training(shape(), x.as<const float>(), p.gamma, p.beta, options().momentum,
                                   options().epsilon, out, saved_mean_.as<float>(),
                                   saved_inv_std_.as<float>(), p.running_mean, p.running_var);
  if (options().residual)
    cpu::add_relu_forward(shape().count(), out, z->as<const float>(), out);
  else if (options().relu)
    cpu::relu_forward(shape().count(), out, out);
}

void BatchNormCpu::forward_inference(const Tensor& x, const Tensor* z, const Tensor& y,
                                     const BatchNormParams& p) const {
  float* out = y.as<float>();
  cpu::batch_norm_forward_inference(shape(), x.as<const float>(), p.gamma, p.beta, p.running_mean,
                                    p.running_var, options().epsilon, out);
  if (options().residual)
    cpu::add_relu_forward(shape().count(), out, z->as<const float>(), out);
  else if (options().relu)
    cpu::relu_forward(shape().count(), out, out);
}

void BatchNormCpu::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                            const Tensor* dz, const BatchNormParams& p) {
  const float* grad = dy.as<const float>();
  if (options().relu) {
    // The gradient behind the ReLU is also the gradient reaching the residual input z.
    float* masked = options().residual ? dz->as<float>() : relu_grad_.as<float>();
    cpu::relu_backward(shape().count(), y.as<const float>(), grad, masked);
    grad = masked;
  }
  cpu::batch_norm_backward(shape(), x.as<const float>(), grad, p.gamma, saved_mean_.as<const float>(),
                           saved_inv_std_.as<const float>(), dx.as<float>(), p.dgamma, p.dbeta);
}

}  // namespace conveyor::nn
