// The CPU reference of every layer, forward and backward: plain loops on oneTBB, NHWC activations,
// KRSC filters. The training step runs on it when there is no GPU, and the cuDNN layers are tested
// against it. Each function is instantiated for float (training) and double (finite-difference
// gradient checks). Results do not depend on the number of threads: reductions use a fixed chunking.
#pragma once

#include <cstddef>
#include <cstdint>

#include "conveyor/train/nn/shape.h"

namespace conveyor::nn::cpu {

// ---- convolution ----------------------------------------------------------------------------------
// y = conv(x, w). x: input shape, w: K x R x S x C, y: output shape.
template <class T>
void conv2d_forward(const ConvGeometry& g, const T* x, const T* w, T* y);
// dx = conv_transpose(dy, w); with accumulate, dx += ... (a residual branch adding into the same input).
template <class T>
void conv2d_backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx, bool accumulate = false);
// dw = correlation of x with dy, summed over the batch (overwrites dw).
template <class T>
void conv2d_backward_filter(const ConvGeometry& g, const T* x, const T* dy, T* dw);

// ---- batch normalization (per channel over n*h*w) --------------------------------------------------
// Normalises with the batch's mean and biased variance; saves mean and 1/sqrt(var + eps) for the
// backward pass and folds the batch into the running statistics the way cuDNN and PyTorch do:
// running = (1 - momentum) * running + momentum * batch, with the unbiased variance.
template <class T>
void batch_norm_forward_training(const Shape4& s, const T* x, const T* gamma, const T* beta, double momentum,
                                 double epsilon, T* y, T* saved_mean, T* saved_inv_std, T* running_mean,
                                 T* running_var);
// Normalises with the running statistics.
template <class T>
void batch_norm_forward_inference(const Shape4& s, const T* x, const T* gamma, const T* beta, const T* mean,
                                  const T* var, double epsilon, T* y);
// dx, dgamma, dbeta from dy and what the forward pass saved (dgamma/dbeta overwritten).
template <class T>
void batch_norm_backward(const Shape4& s, const T* x, const T* dy, const T* gamma, const T* saved_mean,
                         const T* saved_inv_std, T* dx, T* dgamma, T* dbeta);

// ---- element-wise ---------------------------------------------------------------------------------
template <class T>
void relu_forward(std::size_t count, const T* x, T* y);
// dx = dy where y > 0, else 0 (y is the ReLU's output; dx may alias dy).
template <class T>
void relu_backward(std::size_t count, const T* y, const T* dy, T* dx);
// y = max(a + b, 0): the end of a residual block.
template <class T>
void add_relu_forward(std::size_t count, const T* a, const T* b, T* y);

// ---- pooling --------------------------------------------------------------------------------------
template <class T>
void max_pool_forward(const PoolGeometry& g, const T* x, T* y);
// The gradient goes to the first maximum of each window (row-major scan); dx overwritten.
template <class T>
void max_pool_backward(const PoolGeometry& g, const T* x, const T* dy, T* dx);
template <class T>
void avg_pool_forward(const PoolGeometry& g, const T* x, T* y);
template <class T>
void avg_pool_backward(const PoolGeometry& g, const T* dy, T* dx);
// y (n x c) = mean of x over h and w.
template <class T>
void global_avg_pool_forward(const Shape4& s, const T* x, T* y);
template <class T>
void global_avg_pool_backward(const Shape4& s, const T* dy, T* dx);

// ---- fully connected (row-major: x n x in, w out x in, y n x out) -----------------------------------
template <class T>
void linear_forward(int n, int in, int out, const T* x, const T* w, const T* bias, T* y);
template <class T>
void linear_backward_data(int n, int in, int out, const T* dy, const T* w, T* dx);
// dw (out x in) and dbias (out) overwritten.
template <class T>
void linear_backward_weights(int n, int in, int out, const T* x, const T* dy, T* dw, T* dbias);

// ---- loss -----------------------------------------------------------------------------------------
struct CrossEntropyResult {
  double loss_sum = 0;      // sum over the rows of the cross-entropy against the target below
  std::size_t correct = 0;  // rows whose largest logit is the label's
};
// Softmax cross-entropy of each of n rows against the target (1 - label_smoothing) x one_hot(label) +
// label_smoothing / classes (PyTorch's label_smoothing). When dlogits is not null it receives
// (softmax - target) * grad_scale (grad_scale = 1/n for the mean loss).
// Throws InvalidArgument on a label outside [0, classes).
template <class T>
CrossEntropyResult softmax_cross_entropy(int n, int classes, const T* logits, const std::int64_t* labels,
                                         T* dlogits, double grad_scale, double label_smoothing = 0);

// ---- optimizer ------------------------------------------------------------------------------------
// SGD with momentum and weight decay, exactly as torch.optim.SGD (dampening 0):
//   d = grad + weight_decay * w;  v = momentum * v + d;  w -= lr * (nesterov ? d + momentum * v : v).
struct SgdHyper {
  double learning_rate = 0.1;
  double momentum = 0.9;
  double weight_decay = 0;
  bool nesterov = false;
};
template <class T>
void sgd_update(std::size_t count, const T* grad, T* weight, T* velocity, const SgdHyper& hyper);

}  // namespace conveyor::nn::cpu
