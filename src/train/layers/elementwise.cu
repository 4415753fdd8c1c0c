// Element-wise kernels: ReLU, the residual add + ReLU, the classifier's bias and its gradient, and the
// conversion of float32 master weights to the working type. Element-wise passes move 16 bytes per
// thread per step (vector loads and stores) when the pointers allow it.
#include "src/device/cuda_check.h"
#include "src/train/layers/device_math.cuh"
#include "src/train/layers/kernels.h"

namespace conveyor::nn::kernels {
namespace {

constexpr unsigned kThreads = 256;

__device__ __forceinline__ float relu(float x) { return x > 0.f ? x : 0.f; }

// The element-wise maps, as y = op(a) or y = op(a, b) on float values (every storage type converts to
// float and back exactly, so a value passed through unchanged keeps its bits).
struct Relu {
  static constexpr bool kBinary = false;
  __device__ float operator()(float x, float) const { return relu(x); }
};
struct ReluBackward {  // a = the forward output y, b = dy
  static constexpr bool kBinary = true;
  __device__ float operator()(float y, float dy) const { return y > 0.f ? dy : 0.f; }
};
struct AddRelu {
  static constexpr bool kBinary = true;
  __device__ float operator()(float a, float b) const { return relu(a + b); }
};

// y[e] = op(a[e], b[e]) (b unread for a one-input op): 16-byte packs first when every pointer allows,
// then the tail (count % pack) one by one. No __restrict__: these run in place.
template <class T, class Op>
__global__ void map_kernel(std::size_t count, const T* a, const T* b, T* y, bool vector, Op op) {
  for_packs_then_elements<T>(
      count, vector,
      [=](std::size_t p) {
        Pack<T> av = load_pack<T>(a, p);
        Pack<T> bv{};
        if constexpr (Op::kBinary) bv = load_pack<T>(b, p);
#pragma unroll
        for (int j = 0; j < Pack<T>::kSize; ++j)
          av.v[j] = from_float<T>(op(to_float(av.v[j]), Op::kBinary ? to_float(bv.v[j]) : 0.f));
        store_pack(y, p, av);
      },
      [=](std::size_t e) { y[e] = from_float<T>(op(to_float(a[e]), Op::kBinary ? to_float(b[e]) : 0.f)); });
}

// Launches map_kernel over `count` elements of the working type.
template <class Op>
void launch_map(DType type, std::size_t count, const void* a, const void* b, void* y, cudaStream_t stream) {
  dispatch(type, [&]<class T>() {
    const bool vector = aligned16(a) && (!Op::kBinary || aligned16(b)) && aligned16(y);
    map_kernel<T><<<grid_for(count / Pack<T>::kSize + 1, kThreads), kThreads, 0, stream>>>(
        count, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), vector, Op{});
  });
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

// One thread per pixel of the left half: swaps its c channels with those of its mirror pixel.
template <class T>
__global__ void mirror_width_kernel(int n, int h, int w, int c, T* data) {
  const int half = w / 2;
  const std::size_t pixels = static_cast<std::size_t>(n) * h * half;
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < pixels;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t row = e / static_cast<std::size_t>(half);
    const int x = static_cast<int>(e % static_cast<std::size_t>(half));
    T* left = data + (row * w + x) * c;
    T* right = data + (row * w + (w - 1 - x)) * c;
    for (int k = 0; k < c; ++k) {
      const T t = left[k];
      left[k] = right[k];
      right[k] = t;
    }
  }
}

__global__ void average_kernel(std::size_t count, float* __restrict__ x, const float* __restrict__ y) {
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    x[e] = 0.5f * (x[e] + y[e]);
}

}  // namespace

void mirror_width(DType type, int n, int h, int w, int c, void* data, cudaStream_t stream,
                  const std::string& layer) {
  const std::size_t pixels = static_cast<std::size_t>(n) * h * (w / 2);
  if (pixels == 0) return;
  dispatch(type, [&]<class T>() {
    mirror_width_kernel<T>
        <<<grid_for(pixels, kThreads), kThreads, 0, stream>>>(n, h, w, c, static_cast<T*>(data));
  });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (mirror image)");
}

void average_into(std::size_t count, float* x, const float* y, cudaStream_t stream,
                  const std::string& layer) {
  if (count == 0) return;
  average_kernel<<<grid_for(count, kThreads), kThreads, 0, stream>>>(count, x, y);
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (mean of two passes)");
}

void relu_forward(DType type, std::size_t count, const void* x, void* y, cudaStream_t stream,
                  const std::string& layer) {
  launch_map<Relu>(type, count, x, nullptr, y, stream);
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (ReLU)");
}

void relu_backward(DType type, std::size_t count, const void* y, const void* dy, void* dx,
                   cudaStream_t stream, const std::string& layer) {
  launch_map<ReluBackward>(type, count, y, dy, dx, stream);
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (ReLU backward)");
}

void add_relu_forward(DType type, std::size_t count, const void* a, const void* b, void* y,
                      cudaStream_t stream, const std::string& layer) {
  launch_map<AddRelu>(type, count, a, b, y, stream);
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (residual add + ReLU)");
}

void add_bias(int n, int out, const float* bias, float* y, cudaStream_t stream, const std::string& layer) {
  add_bias_kernel<<<grid_for(static_cast<std::size_t>(n) * out, kThreads), kThreads, 0, stream>>>(n, out,
                                                                                                  bias, y);
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (bias)");
}

void column_sums(DType type, int n, int out, const void* m, float* sums, cudaStream_t stream,
                 const std::string& layer) {
  dispatch(type, [&]<class T>() {
    column_sums_kernel<T>
        <<<(out + kThreads - 1) / kThreads, kThreads, 0, stream>>>(n, out, static_cast<const T*>(m), sums);
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
