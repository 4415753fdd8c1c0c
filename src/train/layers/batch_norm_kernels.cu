// Our batch-normalization kernels (see batch_norm_kernels.h). Reductions over the n*h*w rows of an NHWC
// tensor: blocks of 32 channels x 8 row-lanes sum a chunk of rows each (threads of a warp read 32
// consecutive channels of one row), write one partial sum per chunk and channel, and a finishing kernel
// adds the chunks in order, in double.
#include <cmath>

#include "src/device/cuda_check.h"
#include "src/train/layers/batch_norm_kernels.h"
#include "src/train/layers/device_math.cuh"

namespace conveyor::nn::kernels {
namespace {

constexpr int kTile = 32, kLanes = 8;
constexpr unsigned kThreads = 256;

enum class Sum { value, squared_deviation, backward };

// partials[chunk][c] (and partials[chunks + chunk][c] for the backward pass's second sum).
template <class T, Sum kind>
__global__ void partial_sums_kernel(const T* __restrict__ x, const T* __restrict__ dy, std::size_t rows,
                                    int channels, const float* __restrict__ mean,
                                    const float* __restrict__ inv_std, float* __restrict__ partials) {
  __shared__ float first[kLanes][kTile];
  __shared__ float second[kLanes][kTile];
  const int c = blockIdx.x * kTile + threadIdx.x;
  const std::size_t chunks = gridDim.y, chunk = blockIdx.y;
  const std::size_t per_chunk = (rows + chunks - 1) / chunks;
  const std::size_t end = (chunk + 1) * per_chunk < rows ? (chunk + 1) * per_chunk : rows;
  float a = 0.f, b = 0.f;
  if (c < channels) {
    const float m = kind == Sum::value ? 0.f : mean[c];
    const float s = kind == Sum::backward ? inv_std[c] : 1.f;
    for (std::size_t r = chunk * per_chunk + threadIdx.y; r < end; r += kLanes) {
      const float v = to_float(x[r * channels + c]);
      if constexpr (kind == Sum::value) {
        a += v;
      } else if constexpr (kind == Sum::squared_deviation) {
        a += (v - m) * (v - m);
      } else {
        const float g = to_float(dy[r * channels + c]);
        a += g;
        b += g * (v - m) * s;
      }
    }
  }
  first[threadIdx.y][threadIdx.x] = a;
  second[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    for (int lane = 1; lane < kLanes; ++lane) a += first[lane][threadIdx.x], b += second[lane][threadIdx.x];
    partials[chunk * channels + c] = a;
    if constexpr (kind == Sum::backward) partials[(chunks + chunk) * channels + c] = b;
  }
}

__global__ void finish_mean_kernel(const float* partials, int chunks, int channels, std::size_t rows,
                                   float* mean) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  double sum = 0;
  for (int k = 0; k < chunks; ++k) sum += partials[static_cast<std::size_t>(k) * channels + c];
  mean[c] = static_cast<float>(sum / static_cast<double>(rows));
}

__global__ void finish_variance_kernel(const float* partials, int chunks, int channels, std::size_t rows,
                                       const float* mean, double epsilon, double momentum, float* inv_std,
                                       float* running_mean, float* running_var) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  double sum = 0;
  for (int k = 0; k < chunks; ++k) sum += partials[static_cast<std::size_t>(k) * channels + c];
  const double m = static_cast<double>(rows), var = sum / m;
  inv_std[c] = static_cast<float>(1.0 / sqrt(var + epsilon));
  const double unbiased = rows > 1 ? var * m / (m - 1) : var;
  running_mean[c] = static_cast<float>((1 - momentum) * running_mean[c] + momentum * mean[c]);
  running_var[c] = static_cast<float>((1 - momentum) * running_var[c] + momentum * unbiased);
}

__global__ void finish_backward_kernel(const float* partials, int chunks, int channels, float* dgamma,
                                       float* dbeta) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  double sum_dy = 0, sum_dy_xhat = 0;
  for (int k = 0; k < chunks; ++k) {
    sum_dy += partials[static_cast<std::size_t>(k) * channels + c];
    sum_dy_xhat += partials[static_cast<std::size_t>(chunks + k) * channels + c];
  }
  dbeta[c] = static_cast<float>(sum_dy);
  dgamma[c] = static_cast<float>(sum_dy_xhat);
}

// One element-wise pass per channel: y = op(x, c) (+ z, ReLU for inference), in packs when the channel
// count is a multiple of the pack so that a pack never straddles two pixels.
template <class T, class Op>
__global__ void per_channel_kernel(std::size_t count, int channels, const T* __restrict__ x,
                                   const T* __restrict__ other, T* __restrict__ y, Op op, bool vector) {
  for_packs_then_elements<T>(
      count, vector,
      [=](std::size_t p) {
        Pack<T> v = load_pack<T>(x, p);
        Pack<T> o{};
        if (other) o = load_pack<T>(other, p);
        const int c0 = static_cast<int>((p * Pack<T>::kSize) % channels);
#pragma unroll
        for (int j = 0; j < Pack<T>::kSize; ++j)
          v.v[j] = from_float<T>(op(to_float(v.v[j]), other ? to_float(o.v[j]) : 0.f, c0 + j));
        store_pack(y, p, v);
      },
      [=](std::size_t e) {
        y[e] = from_float<T>(
            op(to_float(x[e]), other ? to_float(other[e]) : 0.f, static_cast<int>(e % channels)));
      });
}

struct NormalizeOp {
  const float *mean, *inv_std, *gamma, *beta;
  __device__ float operator()(float v, float, int c) const {
    return (v - mean[c]) * inv_std[c] * gamma[c] + beta[c];
  }
};

struct InferenceOp {
  const float *mean, *var, *gamma, *beta;
  float epsilon;
  bool add, relu;
  __device__ float operator()(float v, float z, int c) const {
    float out = (v - mean[c]) * rsqrtf(var[c] + epsilon) * gamma[c] + beta[c];
    if (add) out += z;
    return relu && !(out > 0.f) ? 0.f : out;
  }
};

// x is the input, `other` is dy.
struct BackwardDataOp {
  const float *mean, *inv_std, *gamma, *dgamma, *dbeta;
  float inv_rows;
  __device__ float operator()(float v, float g, int c) const {
    const float xhat = (v - mean[c]) * inv_std[c];
    return gamma[c] * inv_std[c] * (g - dbeta[c] * inv_rows - xhat * dgamma[c] * inv_rows);
  }
};

template <class T, class Op>
void launch_per_channel(std::size_t rows, int channels, const void* x, const void* other, void* y,
                        const Op& op, cudaStream_t stream) {
  const std::size_t count = rows * channels;
  const bool vector =
      channels % Pack<T>::kSize == 0 && aligned16(x) && aligned16(y) && (!other || aligned16(other));
  per_channel_kernel<T, Op><<<grid_for(count / Pack<T>::kSize + 1, kThreads), kThreads, 0, stream>>>(
      count, channels, static_cast<const T*>(x), static_cast<const T*>(other), static_cast<T*>(y), op,
      vector);
}

dim3 reduction_grid(int channels, std::size_t rows) {
  return dim3(static_cast<unsigned>((channels + kTile - 1) / kTile),
              static_cast<unsigned>(batch_norm_chunks(rows)));
}

}  // namespace

int batch_norm_chunks(std::size_t rows) noexcept {
  const std::size_t chunks = rows / 256;
  return static_cast<int>(chunks < 1 ? 1 : chunks > 512 ? 512 : chunks);
}

void batch_norm_mean(DType type, const void* x, std::size_t rows, int channels, float* partials, float* mean,
                     cudaStream_t stream, const std::string& layer) {
  const dim3 grid = reduction_grid(channels, rows);
  dispatch(type, [&]<class T>() {
    partial_sums_kernel<T, Sum::value><<<grid, dim3(kTile, kLanes), 0, stream>>>(
        static_cast<const T*>(x), nullptr, rows, channels, nullptr, nullptr, partials);
  });
  finish_mean_kernel<<<(channels + kThreads - 1) / kThreads, kThreads, 0, stream>>>(partials, grid.y,
                                                                                    channels, rows, mean);
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (batch-norm mean)");
}

void batch_norm_variance(DType type, const void* x, std::size_t rows, int channels, const float* mean,
                         float* partials, double epsilon, double momentum, float* inv_std,
                         float* running_mean, float* running_var, cudaStream_t stream,
                         const std::string& layer) {
  const dim3 grid = reduction_grid(channels, rows);
  dispatch(type, [&]<class T>() {
    partial_sums_kernel<T, Sum::squared_deviation><<<grid, dim3(kTile, kLanes), 0, stream>>>(
        static_cast<const T*>(x), nullptr, rows, channels, mean, nullptr, partials);
  });
  finish_variance_kernel<<<(channels + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      partials, grid.y, channels, rows, mean, epsilon, momentum, inv_std, running_mean, running_var);
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (batch-norm variance)");
}

void batch_norm_normalize(DType type, const void* x, std::size_t rows, int channels, const float* mean,
                          const float* inv_std, const float* gamma, const float* beta, void* y,
                          cudaStream_t stream, const std::string& layer) {
  dispatch(type, [&]<class T>() {
    launch_per_channel<T>(rows, channels, x, nullptr, y, NormalizeOp{mean, inv_std, gamma, beta}, stream);
  });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (batch-norm normalize)");
}

void batch_norm_inference(DType type, const void* x, std::size_t rows, int channels, const float* gamma,
                          const float* beta, const float* running_mean, const float* running_var,
                          double epsilon, const void* z, bool relu, void* y, cudaStream_t stream,
                          const std::string& layer) {
  const InferenceOp op{running_mean, running_var, gamma, beta, static_cast<float>(epsilon),
                       z != nullptr, relu};
  dispatch(type, [&]<class T>() { launch_per_channel<T>(rows, channels, x, z, y, op, stream); });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (batch-norm inference)");
}

void batch_norm_backward_reduce(DType type, const void* x, const void* dy, std::size_t rows, int channels,
                                const float* mean, const float* inv_std, float* partials, float* dgamma,
                                float* dbeta, cudaStream_t stream, const std::string& layer) {
  const dim3 grid = reduction_grid(channels, rows);
  dispatch(type, [&]<class T>() {
    partial_sums_kernel<T, Sum::backward><<<grid, dim3(kTile, kLanes), 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(dy), rows, channels, mean, inv_std, partials);
  });
  finish_backward_kernel<<<(channels + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      partials, grid.y, channels, dgamma, dbeta);
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (batch-norm backward sums)");
}

void batch_norm_backward_data(DType type, const void* x, const void* dy, std::size_t rows, int channels,
                              const float* mean, const float* inv_std, const float* gamma,
                              const float* dgamma, const float* dbeta, void* dx, cudaStream_t stream,
                              const std::string& layer) {
  const BackwardDataOp op{mean, inv_std, gamma, dgamma, dbeta, 1.f / static_cast<float>(rows)};
  dispatch(type, [&]<class T>() { launch_per_channel<T>(rows, channels, x, dy, dx, op, stream); });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (batch-norm backward data)");
}

}  // namespace conveyor::nn::kernels
