// The classifier: a fully connected layer (row-major x: n x in, w: out x in, float32 logits n x out plus a
// float32 bias) and softmax cross-entropy. On a GPU the products run on cuBLAS (cublasGemmEx, 16-bit or
// fp32 inputs, fp32 accumulation); bias, loss and gradient are our kernels.
#pragma once

#include <cstdint>
#include <string>

#include "src/train/layers/context.h"

namespace conveyor::nn {

class Linear {
 public:
  Linear(std::string name, int batch, int in_features, int out_features);

  const std::string& name() const noexcept { return name_; }
  int batch() const noexcept { return batch_; }
  int in_features() const noexcept { return in_; }
  int out_features() const noexcept { return out_; }
  std::size_t weight_count() const noexcept { return static_cast<std::size_t>(in_) * out_; }

  // logits = x w^T + bias (x and w in the context's type, logits and bias float32).
  void forward(Context& ctx, const Tensor& x, const void* w, const float* bias, float* logits) const;
  // dx = dy w (dy: n x out in the context's type).
  void backward_data(Context& ctx, const void* dy, const void* w, const Tensor& dx) const;
  // dw = dy^T x in the context's type; dbias = sum of dy over the batch, float32.
  void backward_weights(Context& ctx, const Tensor& x, const void* dy, void* dw, float* dbias) const;

 private:
  std::string name_;
  int batch_, in_, out_;
};

class SoftmaxCrossEntropy {
 public:
  SoftmaxCrossEntropy(std::string name, int batch, int classes);

  // For each of the first valid_rows rows: row_loss = the cross-entropy of softmax(logits) against the
  // target (1 - label_smoothing) x one_hot(label) + label_smoothing / classes, row_correct = 1 when the
  // largest logit is the label's, 0 otherwise, -1 when the label is outside [0, classes) (and row_loss NaN).
  // When dlogits is not null it receives (softmax - target) * grad_scale in the context's type, zero for
  // the other rows. labels are int64 (device memory on a GPU).
  void forward_backward(Context& ctx, const float* logits, const std::int64_t* labels, int valid_rows,
                        float grad_scale, void* dlogits, float* row_loss, int* row_correct,
                        float label_smoothing = 0.f) const;

 private:
  std::string name_;
  int batch_, classes_;
};

}  // namespace conveyor::nn
