// The CUDA twin of Elementwise: our kernels (elementwise.cu) on the context's stream.
#pragma once

#include <cuda_runtime.h>

#include "src/train/layers/elementwise.h"

namespace conveyor::nn {

class ElementwiseCuda final : public Elementwise {
 public:
  explicit ElementwiseCuda(cudaStream_t stream) noexcept : stream_(stream) {}

  void relu_forward(const Tensor& x, const Tensor& y) const override;
  void relu_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) const override;
  void mirror_width(const Tensor& x) const override;
  void copy_floats(const float* from, float* to, std::size_t count) const override;
  void average_into(float* x, const float* y, std::size_t count) const override;
  void convert_from_float(DType type, std::size_t count, const float* src, void* dst) const override;

 private:
  cudaStream_t stream_;
};

}  // namespace conveyor::nn
