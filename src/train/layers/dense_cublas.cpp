#include "src/train/layers/dense_cublas.h"

#include "src/train/layers/kernels.h"

namespace conveyor::nn {
namespace {

// Row-major products through column-major cuBLAS: a row-major r x c matrix is the column-major c x r
// matrix of the same bytes, so each row-major product below is computed as its transpose.
void gemm(const CudaContext& cuda, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
          const void* a, int lda, const void* b, int ldb, float beta, void* c, cudaDataType_t c_type, int ldc,
          const std::string& what) {
  const float alpha = 1.f;
  const cudaDataType_t ab = cublas_type(cuda.dtype());
  CONVEYOR_CUBLAS(cublasGemmEx(cuda.cublas(), ta, tb, m, n, k, &alpha, a, ab, lda, b, ab, ldb, &beta, c,
                               c_type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  what);
}

}  // namespace

void DenseCublas::forward(const Tensor& x, const void* w, const float* bias, float* logits) const {
  // logits^T (out x n) = W (in x out, col-major)^T * x^T (in x n)
  gemm(cuda_, CUBLAS_OP_T, CUBLAS_OP_N, out_features(), batch(), in_features(), w, in_features(), x.data,
       in_features(), 0.f, logits, CUDA_R_32F, out_features(), name() + " (forward)");
  kernels::add_bias(batch(), out_features(), bias, logits, cuda_.stream(), name());
}

void DenseCublas::backward_data(const void* dy, const void* w, const Tensor& dx) const {
  // dx^T (in x n) = W (in x out) * dy^T (out x n)
  gemm(cuda_, CUBLAS_OP_N, CUBLAS_OP_N, in_features(), batch(), out_features(), w, in_features(), dy,
       out_features(), 0.f, dx.data, cublas_type(cuda_.dtype()), in_features(), name() + " (backward data)");
}

void DenseCublas::backward_weights(const Tensor& x, const void* dy, void* dw, float* dbias) const {
  // dW (in x out, col-major) = x^T (in x n) * dy (n x out)
  gemm(cuda_, CUBLAS_OP_N, CUBLAS_OP_T, in_features(), out_features(), batch(), x.data, in_features(), dy,
       out_features(), 0.f, dw, cublas_type(cuda_.dtype()), in_features(), name() + " (backward weights)");
  kernels::column_sums(cuda_.dtype(), batch(), out_features(), dy, dbias, cuda_.stream(), name());
}

}  // namespace conveyor::nn
