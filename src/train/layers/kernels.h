// Launchers of the CUDA kernels that neither cuDNN nor cuBLAS provides: element-wise ReLU and residual
// add, the classifier's bias, softmax cross-entropy, SGD, and conversions. Each is enqueued on `stream`
// and checks its launch (DeviceError naming `layer`). Pointers are device pointers; `type` is the
// storage type of the activation-like arguments (void*), float32 elsewhere.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "src/train/layers/tensor.h"

namespace conveyor::nn::kernels {

// y = max(x, 0); x may alias y.
void relu_forward(DType type, std::size_t count, const void* x, void* y, cudaStream_t stream,
                  const std::string& layer);
// dx = y > 0 ? dy : 0; dx may alias dy.
void relu_backward(DType type, std::size_t count, const void* y, const void* dy, void* dx,
                   cudaStream_t stream, const std::string& layer);
// y = max(a + b, 0); a may alias y.
void add_relu_forward(DType type, std::size_t count, const void* a, const void* b, void* y,
                      cudaStream_t stream, const std::string& layer);

// y[i][o] += bias[o] for an n x out float matrix.
void add_bias(int n, int out, const float* bias, float* y, cudaStream_t stream, const std::string& layer);
// sums[o] = sum over i of m[i][o] (m: n x out in `type`).
void column_sums(DType type, int n, int out, const void* m, float* sums, cudaStream_t stream,
                 const std::string& layer);

// Softmax cross-entropy of the first valid_rows of n rows of float logits against the target
// (1 - smoothing) x one_hot + smoothing / classes: row_loss[i], row_correct[i] (1 when the arg-max is the
// label, -1 when the label is outside [0, classes)), and, when dlogits is not null,
// dlogits = (softmax - target) * grad_scale in `type` (rows past valid_rows get zeros).
void softmax_cross_entropy(DType type, int n, int valid_rows, int classes, const float* logits,
                           const std::int64_t* labels, float smoothing, float grad_scale, void* dlogits,
                           float* row_loss, int* row_correct, cudaStream_t stream, const std::string& layer);

// x[i] = (x[i] + y[i]) / 2 for float32 arrays (averaging two passes' logits).
void average_into(std::size_t count, float* x, const float* y, cudaStream_t stream, const std::string& layer);
// Mirrors every image of an n x h x w x c tensor in `type` left-right, in place.
void mirror_width(DType type, int n, int h, int w, int c, void* data, cudaStream_t stream,
                  const std::string& layer);

// Running sums of evaluated rows, in device memory.
struct RowSums {
  double loss;
  unsigned long long correct;
  unsigned long long rows;
  unsigned long long bad_labels;  // rows whose label was outside [0, classes) (row_correct -1)
};
// Adds the first `rows` entries of row_loss and row_correct (softmax_cross_entropy's) to *sums, in stream
// order (one block: no atomics, the same sums every run).
void accumulate_rows(int rows, const float* row_loss, const int* row_correct, RowSums* sums,
                     cudaStream_t stream, const std::string& layer);

// Hyper-parameters the SGD kernel reads from device memory, so that a captured CUDA graph sees changes.
struct SgdDeviceHyper {
  float learning_rate;
  float momentum;
  float weight_decay;
  float inverse_loss_scale;  // gradients are multiplied by this first (1 unless fp16 loss scaling)
  int nesterov;
};
// Writes `value` to device memory in stream order (a kernel argument, so no host buffer must outlive it).
void set_sgd_hyper(SgdDeviceHyper* device_hyper, const SgdDeviceHyper& value, cudaStream_t stream);

// SGD with momentum and weight decay on float32 master weights (torch.optim.SGD semantics); grad is in
// `grad_type`; when working is not null the updated weights are also written there in `grad_type`.
void sgd_update(DType grad_type, std::size_t count, const void* grad, float* master, float* velocity,
                void* working, const SgdDeviceHyper* hyper, cudaStream_t stream, const std::string& layer);

// dst = src converted to `type` (float32 master weights to the working copy).
void convert_from_float(DType type, std::size_t count, const float* src, void* dst, cudaStream_t stream,
                        const std::string& layer);

}  // namespace conveyor::nn::kernels
