// The user's own model for examples/own_model: a two-layer perceptron (inputs -> hidden ReLU -> classes)
// trained with softmax cross-entropy and plain SGD, written with cuBLAS and three CUDA kernels. Nothing of
// conveyor's training wing: this is what a team with its own model code plugs behind conveyor's feeder.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace own_model {

class Mlp {
 public:
  // Weights drawn from `seed` (He initialisation); everything runs on `stream`.
  Mlp(int inputs, int hidden, int classes, int max_batch, cudaStream_t stream, std::uint64_t seed);
  ~Mlp();
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  // One SGD step on `batch` rows of `x` (device, row-major batch x inputs, float32) with integer labels
  // (device, int64). Enqueued on the stream; the loss of the step is read by last_loss().
  void step(const float* x, const std::int64_t* labels, int batch, float learning_rate);
  // Mean cross-entropy of the last step (synchronises the stream).
  float last_loss();

 private:
  int inputs_, hidden_, classes_, max_batch_;
  cudaStream_t stream_;
  cublasHandle_t blas_ = nullptr;
  float* w1_ = nullptr;  // hidden x inputs
  float* b1_ = nullptr;
  float* w2_ = nullptr;  // classes x hidden
  float* b2_ = nullptr;
  float* h_ = nullptr;       // batch x hidden, after ReLU
  float* logits_ = nullptr;  // batch x classes, then the gradient of the loss with respect to them
  float* dh_ = nullptr;      // batch x hidden
  float* dw1_ = nullptr;
  float* db1_ = nullptr;
  float* dw2_ = nullptr;
  float* db2_ = nullptr;
  float* loss_ = nullptr;  // one float: sum of the batch's cross-entropy
  int last_batch_ = 1;
};

}  // namespace own_model
