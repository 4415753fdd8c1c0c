// Our own batch-normalization kernels for NHWC tensors: the unfused baseline (separate mean, variance,
// normalize kernels, and two for the backward pass) and the fallback when cuDNN declines a
// configuration. Per-channel sums go through `partials` (chunks x channels floats, or twice that for the
// backward pass) and are finished in a fixed order, so results are deterministic.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "src/train/layers/tensor.h"

namespace conveyor::nn::kernels {

// How many row chunks the reductions of a tensor with `rows` rows use (size the partials buffer with it).
int batch_norm_chunks(std::size_t rows) noexcept;

// mean[c] = sum of x over rows / rows.
void batch_norm_mean(DType type, const void* x, std::size_t rows, int channels, float* partials, float* mean,
                     cudaStream_t stream, const std::string& layer);
// inv_std[c] = 1 / sqrt(biased variance + epsilon), and the running statistics updated with momentum
// (unbiased variance), as cuDNN does.
void batch_norm_variance(DType type, const void* x, std::size_t rows, int channels, const float* mean,
                         float* partials, double epsilon, double momentum, float* inv_std,
                         float* running_mean, float* running_var, cudaStream_t stream,
                         const std::string& layer);
// y = (x - mean) * inv_std * gamma + beta.
void batch_norm_normalize(DType type, const void* x, std::size_t rows, int channels, const float* mean,
                          const float* inv_std, const float* gamma, const float* beta, void* y,
                          cudaStream_t stream, const std::string& layer);
// Inference: y = relu?((x - running_mean) / sqrt(running_var + eps) * gamma + beta (+ z)); z may be null.
void batch_norm_inference(DType type, const void* x, std::size_t rows, int channels, const float* gamma,
                          const float* beta, const float* running_mean, const float* running_var,
                          double epsilon, const void* z, bool relu, void* y, cudaStream_t stream,
                          const std::string& layer);
// dbeta = sum dy, dgamma = sum dy * xhat.
void batch_norm_backward_reduce(DType type, const void* x, const void* dy, std::size_t rows, int channels,
                                const float* mean, const float* inv_std, float* partials, float* dgamma,
                                float* dbeta, cudaStream_t stream, const std::string& layer);
// dx = gamma * inv_std * (dy - dbeta / rows - xhat * dgamma / rows).
void batch_norm_backward_data(DType type, const void* x, const void* dy, std::size_t rows, int channels,
                              const float* mean, const float* inv_std, const float* gamma,
                              const float* dgamma, const float* dbeta, void* dx, cudaStream_t stream,
                              const std::string& layer);

}  // namespace conveyor::nn::kernels
