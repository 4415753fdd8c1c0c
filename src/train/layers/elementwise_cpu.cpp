// CPU reference of the element-wise passes (ReLU, the residual add + ReLU), and the CPU twin of
// Elementwise over them (plus mirroring a batch and averaging two passes' logits).
#include "src/train/layers/elementwise_cpu.h"

#include <algorithm>

#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"
#include "src/train/layers/cpu_parallel.h"

namespace conveyor::nn::cpu {

template <class T>
void relu_forward(std::size_t count, const T* x, T* y) {
  parallel_ranges(count, 4096, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
  });
}

template <class T>
void relu_backward(std::size_t count, const T* y, const T* dy, T* dx) {
  parallel_ranges(count, 4096, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
  });
}

template <class T>
void add_relu_forward(std::size_t count, const T* a, const T* b, T* y) {
  parallel_ranges(count, 4096, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const T sum = a[i] + b[i];
      y[i] = sum > T(0) ? sum : T(0);
    }
  });
}

#define CONVEYOR_INSTANTIATE(T)                                        \
  template void relu_forward<T>(std::size_t, const T*, T*);            \
  template void relu_backward<T>(std::size_t, const T*, const T*, T*); \
  template void add_relu_forward<T>(std::size_t, const T*, const T*, T*);
CONVEYOR_INSTANTIATE(float)
CONVEYOR_INSTANTIATE(double)
#undef CONVEYOR_INSTANTIATE

}  // namespace conveyor::nn::cpu

namespace conveyor::nn {

void ElementwiseCpu::relu_forward(const Tensor& x, const Tensor& y) const {
  cpu::relu_forward(x.count(), x.as<const float>(), y.as<float>());
}

void ElementwiseCpu::relu_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) const {
  cpu::relu_backward(y.count(), y.as<const float>(), dy.as<const float>(), dx.as<float>());
}

void ElementwiseCpu::mirror_width(const Tensor& x) const {
  const Shape4 s = x.shape;
  float* data = x.as<float>();
  const auto rows = static_cast<std::size_t>(s.n) * static_cast<std::size_t>(s.h);
  const auto width = static_cast<std::size_t>(s.w), channels = static_cast<std::size_t>(s.c);
  cpu::parallel_ranges(rows, 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row)
      for (std::size_t x0 = 0; x0 < width / 2; ++x0) {
        float* left = data + (row * width + x0) * channels;
        float* right = data + (row * width + (width - 1 - x0)) * channels;
        std::swap_ranges(left, left + channels, right);
      }
  });
}

void ElementwiseCpu::copy_floats(const float* from, float* to, std::size_t count) const {
  std::copy(from, from + count, to);
}

void ElementwiseCpu::average_into(float* x, const float* y, std::size_t count) const {
  for (std::size_t i = 0; i < count; ++i) x[i] = 0.5f * (x[i] + y[i]);
}

void ElementwiseCpu::convert_from_float(DType type, std::size_t, const float*, void*) const {
  // The CPU reference keeps every tensor in float32: it has no working copy to make.
  throw InvalidArgument(std::string("the CPU reference computes in fp32, not ") + to_string(type));
}

}  // namespace conveyor::nn
