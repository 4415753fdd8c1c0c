// The dense (fully connected) layer's interface, the classifier: row-major x (n x in, the context's type),
// w (out x in, the context's type), float32 logits (n x out) and bias. Its twins are the CPU reference
// (dense_cpu.h) and cuBLAS (dense_cublas.h: cublasGemmEx with fp32 accumulation, our bias kernels); a
// Context makes the one of its backend.
#pragma once

#include <cstddef>
#include <string>

#include "src/train/layers/tensor.h"

namespace conveyor::nn {

class Dense {
 public:
  virtual ~Dense() = default;
  Dense(const Dense&) = delete;
  Dense& operator=(const Dense&) = delete;

  const std::string& name() const noexcept { return name_; }
  int batch() const noexcept { return batch_; }
  int in_features() const noexcept { return in_; }
  int out_features() const noexcept { return out_; }
  std::size_t weight_count() const noexcept { return static_cast<std::size_t>(in_) * out_; }

  // logits = x w^T + bias.
  virtual void forward(const Tensor& x, const void* w, const float* bias, float* logits) const = 0;
  // dx = dy w (dy: n x out in the context's type).
  virtual void backward_data(const void* dy, const void* w, const Tensor& dx) const = 0;
  // dw = dy^T x in the context's type; dbias = sum of dy over the batch, float32.
  virtual void backward_weights(const Tensor& x, const void* dy, void* dw, float* dbias) const = 0;

 protected:
  Dense(std::string name, int batch, int in_features, int out_features);

 private:
  std::string name_;
  int batch_, in_, out_;
};

}  // namespace conveyor::nn
