// CPU reference of the fully connected layer, and the CPU twin of Dense over it.
#include "src/train/layers/dense_cpu.h"

#include <algorithm>

#include "conveyor/train/nn/reference.h"
#include "src/train/layers/cpu_parallel.h"

namespace conveyor::nn::cpu {

template <class T>
void linear_forward(int n, int in, int out, const T* x, const T* w, const T* bias, T* y) {
  parallel_ranges(static_cast<std::size_t>(n), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i)
      for (int o = 0; o < out; ++o) {
        const T* xr = x + i * in;
        const T* wr = w + static_cast<std::size_t>(o) * in;
        T acc = bias ? bias[o] : T(0);
        for (int k = 0; k < in; ++k) acc += xr[k] * wr[k];
        y[i * out + o] = acc;
      }
  });
}

template <class T>
void linear_backward_data(int n, int in, int out, const T* dy, const T* w, T* dx) {
  parallel_ranges(static_cast<std::size_t>(n), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      T* dxr = dx + i * in;
      std::fill(dxr, dxr + in, T(0));
      for (int o = 0; o < out; ++o) {
        const T g = dy[i * out + o];
        const T* wr = w + static_cast<std::size_t>(o) * in;
        for (int k = 0; k < in; ++k) dxr[k] += g * wr[k];
      }
    }
  });
}

template <class T>
void linear_backward_weights(int n, int in, int out, const T* x, const T* dy, T* dw, T* dbias) {
  parallel_ranges(static_cast<std::size_t>(out), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t o = begin; o < end; ++o) {
      T* dwr = dw + o * in;
      std::fill(dwr, dwr + in, T(0));
      T db = T(0);
      for (int i = 0; i < n; ++i) {
        const T g = dy[static_cast<std::size_t>(i) * out + o];
        db += g;
        const T* xr = x + static_cast<std::size_t>(i) * in;
        for (int k = 0; k < in; ++k) dwr[k] += g * xr[k];
      }
      if (dbias) dbias[o] = db;
    }
  });
}

#define CONVEYOR_INSTANTIATE(T)                                                     \
  template void linear_forward<T>(int, int, int, const T*, const T*, const T*, T*); \
  template void linear_backward_data<T>(int, int, int, const T*, const T*, T*);     \
  template void linear_backward_weights<T>(int, int, int, const T*, const T*, T*, T*);
CONVEYOR_INSTANTIATE(float)
CONVEYOR_INSTANTIATE(double)
#undef CONVEYOR_INSTANTIATE

}  // namespace conveyor::nn::cpu

namespace conveyor::nn {

void DenseCpu::forward(const Tensor& x, const void* w, const float* bias, float* logits) const {
  cpu::linear_forward(batch(), in_features(), out_features(), x.as<const float>(),
                      static_cast<const float*>(w), bias, logits);
}

void DenseCpu::backward_data(const void* dy, const void* w, const Tensor& dx) const {
  cpu::linear_backward_data(batch(), in_features(), out_features(), static_cast<const float*>(dy),
                            static_cast<const float*>(w), dx.as<float>());
}

void DenseCpu::backward_weights(const Tensor& x, const void* dy, void* dw, float* dbias) const {
  cpu::linear_backward_weights(batch(), in_features(), out_features(), x.as<const float>(),
                               static_cast<const float*>(dy), static_cast<float*>(dw), dbias);
}

}  // namespace conveyor::nn
