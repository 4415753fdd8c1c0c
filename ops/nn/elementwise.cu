// Element-wise kernels: ReLU, the residual add + ReLU, the classifier's bias and its gradient, and the
// conversion of float32 master weights to the working type. Element-wise passes move 16 bytes per
// thread per step (vector loads and stores) when the pointers allow it.
#include "ops/nn/device_math.cuh"
#include "ops/nn/kernels.h"
#include "src/device/cuda_check.h"

namespace conveyor::nn::kernels {
namespace {

constexpr unsigned kThreads = 256;

struct Relu {
  __device__ float operator()(float x) const { return x > 0.f ? x : 0.f; }
};

// Packs first, then the tail (count % pack) one by one. No __restrict__: these run in place.
template <class T>
__global__ void relu_kernel(std::size_t count, const T* x, T* y, bool vector) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  std::size_t done = 0;
  if (vector) {
    const std::size_t packs = count / Pack<T>::kSize;
    for (std::size_t p = i; p < packs; p += stride) {
      Pack<T> v = load_pack<T>(x, p);
#pragma unroll
      for (int j = 0; j < Pack<T>::kSize; ++j) v.v[j] = from_float<T>(Relu{}(to_float(v.v[j])));
      store_pack(y, p, v);
    }
    done = packs * Pack<T>::kSize;
  }
  for (std::size_t e = done + i; e < count; e += stride) y[e] = from_float<T>(Relu{}(to_float(x[e])));
}

template <class T>
__global__ void relu_backward_kernel(std::size_t count, const T* y, const T* dy, T* dx, bool vector) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  std::size_t done = 0;
  if (vector) {
    const std::size_t packs = count / Pack<T>::kSize;
    for (std::size_t p = i; p < packs; p += stride) {
      const Pack<T> yv = load_pack<T>(y, p);
      Pack<T> g = load_pack<T>(dy, p);
#pragma unroll
      for (int j = 0; j < Pack<T>::kSize; ++j)
        if (!(to_float(yv.v[j]) > 0.f)) g.v[j] = from_float<T>(0.f);
      store_pack(dx, p, g);
    }
    done = packs * Pack<T>::kSize;
  }
  for (std::size_t e = done + i; e < count; e += stride) dx[e] = to_float(y[e]) > 0.f ? dy[e] : from_float<T>(0.f);
}

template <class T>
__global__ void add_relu_kernel(std::size_t count, const T* a, const T* b, T* y, bool vector) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  std::size_t done = 0;
  if (vector) {
    const std::size_t packs = count / Pack<T>::kSize;
    for (std::size_t p = i; p < packs; p += stride) {
      Pack<T> av = load_pack<T>(a, p);
      const Pack<T> bv = load_pack<T>(b, p);
#pragma unroll
      for (int j = 0; j < Pack<T>::kSize; ++j)
        av.v[j] = from_float<T>(Relu{}(to_float(av.v[j]) + to_float(bv.v[j])));
      store_pack(y, p, av);
    }
    done = packs * Pack<T>::kSize;
  }
  for (std::size_t e = done + i; e < count; e += stride)
    y[e] = from_float<T>(Relu{}(to_float(a[e]) + to_float(b[e])));
}

__global__ void add_bias_kernel(int n, int out, const float* __restrict__ bias, float* y) {
  const std::size_t total = static_cast<std::size_t>(n) * out;
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    y[e] += bias[e % out];
}

// One thread per column, rows summed in order: deterministic, and coalesced across the threads.
template <class T>
__global__ void column_sums_kernel(int n, int out, const T* __restrict__ m, float* sums) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= out) return;
  float acc = 0.f;
  for (int i = 0; i < n; ++i) acc += to_float(m[static_cast<std::size_t>(i) * out + o]);
  sums[o] = acc;
}

template <class T>
__global__ void convert_kernel(std::size_t count, const float* __restrict__ src, T* dst) {
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[e] = from_float<T>(src[e]);
}

}  // namespace

void relu_forward(DType type, std::size_t count, const void* x, void* y, cudaStream_t stream,
                  const std::string& layer) {
  dispatch(type, [&]<class T>() {
    const bool vector = aligned16(x) && aligned16(y);
    relu_kernel<T><<<grid_for(count / Pack<T>::kSize + 1, kThreads), kThreads, 0, stream>>>(
        count, static_cast<const T*>(x), static_cast<T*>(y), vector);
  });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (ReLU)");
}

void relu_backward(DType type, std::size_t count, const void* y, const void* dy, void* dx, cudaStream_t stream,
                   const std::string& layer) {
  dispatch(type, [&]<class T>() {
    const bool vector = aligned16(y) && aligned16(dy) && aligned16(dx);
    relu_backward_kernel<T><<<grid_for(count / Pack<T>::kSize + 1, kThreads), kThreads, 0, stream>>>(
        count, static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), vector);
  });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (ReLU backward)");
}

void add_relu_forward(DType type, std::size_t count, const void* a, const void* b, void* y, cudaStream_t stream,
                      const std::string& layer) {
  dispatch(type, [&]<class T>() {
    const bool vector = aligned16(a) && aligned16(b) && aligned16(y);
    add_relu_kernel<T><<<grid_for(count / Pack<T>::kSize + 1, kThreads), kThreads, 0, stream>>>(
        count, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), vector);
  });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (residual add + ReLU)");
}

void add_bias(int n, int out, const float* bias, float* y, cudaStream_t stream, const std::string& layer) {
  add_bias_kernel<<<grid_for(static_cast<std::size_t>(n) * out, kThreads), kThreads, 0, stream>>>(n, out, bias, y);
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (bias)");
}

void column_sums(DType type, int n, int out, const void* m, float* sums, cudaStream_t stream,
                 const std::string& layer) {
  dispatch(type, [&]<class T>() {
    column_sums_kernel<T><<<(out + kThreads - 1) / kThreads, kThreads, 0, stream>>>(n, out, static_cast<const T*>(m),
                                                                                    sums);
  });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (bias gradient)");
}

void convert_from_float(DType type, std::size_t count, const float* src, void* dst, cudaStream_t stream,
                        const std::string& layer) {
  dispatch(type, [&]<class T>() {
    convert_kernel<T><<<grid_for(count, kThreads), kThreads, 0, stream>>>(count, src, static_cast<T*>(dst));
  });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (working copy of the weights)");
}

}  // namespace conveyor::nn::kernels
