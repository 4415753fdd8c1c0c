#include "src/train/layers/linear.h"

#include <algorithm>
#include <limits>

#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"

#ifdef CONVEYOR_HAVE_CUDA
#include "src/train/layers/cuda_context.h"
#include "src/train/layers/kernels.h"
#endif

namespace conveyor::nn {

Linear::Linear(std::string name, int batch, int in_features, int out_features)
    : name_(std::move(name)), batch_(batch), in_(in_features), out_(out_features) {
  if (batch < 1 || in_features < 1 || out_features < 1) throw InvalidArgument(name_ + ": empty linear layer");
}

#ifdef CONVEYOR_HAVE_CUDA
namespace {

// Row-major products through column-major cuBLAS: a row-major r x c matrix is the column-major c x r
// matrix of the same bytes, so each row-major product below is computed as its transpose.
void gemm(CudaContext& cuda, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* a,
          int lda, const void* b, int ldb, float beta, void* c, cudaDataType_t c_type, int ldc,
          const std::string& what) {
  const float alpha = 1.f;
  const cudaDataType_t ab = cublas_type(cuda.dtype());
  CONVEYOR_CUBLAS(cublasGemmEx(cuda.cublas(), ta, tb, m, n, k, &alpha, a, ab, lda, b, ab, ldb, &beta, c,
                               c_type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  what);
}

}  // namespace
#endif

void Linear::forward(Context& ctx, const Tensor& x, const void* w, const float* bias, float* logits) const {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) {
    CudaContext& cuda = ctx.cuda();
    // logits^T (out x n) = W (in x out, col-major)^T * x^T (in x n)
    gemm(cuda, CUBLAS_OP_T, CUBLAS_OP_N, out_, batch_, in_, w, in_, x.data, in_, 0.f, logits, CUDA_R_32F,
         out_, name_ + " (forward)");
    kernels::add_bias(batch_, out_, bias, logits, cuda.stream(), name_);
    return;
  }
#endif
  (void)ctx;
  cpu::linear_forward(batch_, in_, out_, x.as<const float>(), static_cast<const float*>(w), bias, logits);
}

void Linear::backward_data(Context& ctx, const void* dy, const void* w, const Tensor& dx) const {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) {
    CudaContext& cuda = ctx.cuda();
    // dx^T (in x n) = W (in x out) * dy^T (out x n)
    gemm(cuda, CUBLAS_OP_N, CUBLAS_OP_N, in_, batch_, out_, w, in_, dy, out_, 0.f, dx.data,
         cublas_type(cuda.dtype()), in_, name_ + " (backward data)");
    return;
  }
#endif
  (void)ctx;
  cpu::linear_backward_data(batch_, in_, out_, static_cast<const float*>(dy), static_cast<const float*>(w),
                            dx.as<float>());
}

void Linear::backward_weights(Context& ctx, const Tensor& x, const void* dy, void* dw, float* dbias) const {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) {
    CudaContext& cuda = ctx.cuda();
    // dW (in x out, col-major) = x^T (in x n) * dy (n x out)
    gemm(cuda, CUBLAS_OP_N, CUBLAS_OP_T, in_, out_, batch_, x.data, in_, dy, out_, 0.f, dw,
         cublas_type(cuda.dtype()), in_, name_ + " (backward weights)");
    kernels::column_sums(cuda.dtype(), batch_, out_, dy, dbias, cuda.stream(), name_);
    return;
  }
#endif
  (void)ctx;
  cpu::linear_backward_weights(batch_, in_, out_, x.as<const float>(), static_cast<const float*>(dy),
                               static_cast<float*>(dw), dbias);
}

SoftmaxCrossEntropy::SoftmaxCrossEntropy(std::string name, int batch, int classes)
    : name_(std::move(name)), batch_(batch), classes_(classes) {
  if (batch < 1 || classes < 2) throw InvalidArgument(name_ + ": needs a batch and at least two classes");
}

void SoftmaxCrossEntropy::forward_backward(Context& ctx, const float* logits, const std::int64_t* labels,
                                           int valid_rows, float grad_scale, void* dlogits, float* row_loss,
                                           int* row_correct, float label_smoothing) const {
  if (valid_rows < 0 || valid_rows > batch_) throw InvalidArgument(name_ + ": more rows than the batch");
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) {
    kernels::softmax_cross_entropy(ctx.dtype(), batch_, valid_rows, classes_, logits, labels, label_smoothing,
                                   grad_scale, dlogits, row_loss, row_correct, ctx.stream(), name_);
    return;
  }
#endif
  (void)ctx;
  auto* grad = static_cast<float*>(dlogits);
  if (grad) std::fill(grad, grad + static_cast<std::size_t>(batch_) * classes_, 0.f);
  for (int i = 0; i < valid_rows; ++i) {
    const std::size_t row = static_cast<std::size_t>(i) * classes_;
    if (labels[i] < 0 || labels[i] >= classes_) {
      row_loss[i] = std::numeric_limits<float>::quiet_NaN();
      row_correct[i] = -1;
      continue;
    }
    const cpu::CrossEntropyResult r = cpu::softmax_cross_entropy(
        1, classes_, logits + row, labels + i, grad ? grad + row : nullptr, grad_scale, label_smoothing);
    row_loss[i] = static_cast<float>(r.loss_sum);
    row_correct[i] = static_cast<int>(r.correct);
  }
}

}  // namespace conveyor::nn
