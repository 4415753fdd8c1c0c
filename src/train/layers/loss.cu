// Softmax cross-entropy (optionally label-smoothed) and its gradient in one pass: one warp per row, so the
// 10-way and the 1000-way classifiers both read their logits coalesced. The arg-max breaks ties towards
// the smaller class, as the CPU reference does. Also the sums of evaluated rows.
#include <cfloat>
#include <climits>
#include <cmath>

#include "src/device/cuda_check.h"
#include "src/train/layers/device_math.cuh"
#include "src/train/layers/kernels.h"

namespace conveyor::nn::kernels {
namespace {

constexpr int kWarpsPerBlock = 4;

template <class T>
__global__ void softmax_cross_entropy_kernel(int n, int valid_rows, int classes,
                                             const float* __restrict__ logits,
                                             const std::int64_t* __restrict__ labels, float smoothing,
                                             float grad_scale, T* __restrict__ dlogits, float* row_loss,
                                             int* row_correct) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= n) return;
  T* grad = dlogits ? dlogits + static_cast<std::size_t>(row) * classes : nullptr;
  if (row >= valid_rows) {
    if (grad)
      for (int k = lane; k < classes; k += 32) grad[k] = from_float<T>(0.f);
    return;
  }
  const float* z = logits + static_cast<std::size_t>(row) * classes;
  float best = -FLT_MAX;
  int arg = INT_MAX;
  for (int k = lane; k < classes; k += 32) {
    const float v = z[k];
    if (v > best || (v == best && k < arg)) best = v, arg = k;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, best, offset);
    const int other_arg = __shfl_xor_sync(0xffffffffu, arg, offset);
    if (other > best || (other == best && other_arg < arg)) best = other, arg = other_arg;
  }
  float sum = 0.f, logit_sum = 0.f;
  for (int k = lane; k < classes; k += 32) sum += expf(z[k] - best), logit_sum += z[k];
  for (int offset = 16; offset > 0; offset /= 2) {
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    logit_sum += __shfl_xor_sync(0xffffffffu, logit_sum, offset);
  }
  const std::int64_t label = labels[row];
  if (label < 0 || label >= classes) {
    if (lane == 0) row_loss[row] = nanf(""), row_correct[row] = -1;
    if (grad)
      for (int k = lane; k < classes; k += 32) grad[k] = from_float<T>(0.f);
    return;
  }
  // -log p_k = log(sum) + best - z_k, so the mean over k of -log p_k is log(sum) + best - mean(z).
  const float log_partition = logf(sum) + best;
  if (lane == 0) {
    row_loss[row] = smoothing > 0.f
                        ? (1.f - smoothing) * (log_partition - z[label]) +
                              smoothing * (log_partition - logit_sum / static_cast<float>(classes))
                        : log_partition - z[label];
    row_correct[row] = arg == label ? 1 : 0;
  }
  if (grad) {
    const float inv_sum = 1.f / sum;
    const float off = smoothing / static_cast<float>(classes), on = 1.f - smoothing + off;
    for (int k = lane; k < classes; k += 32) {
      const float p = expf(z[k] - best) * inv_sum;
      grad[k] = from_float<T>((p - (k == label ? on : off)) * grad_scale);
    }
  }
}

constexpr int kSumThreads = 256;

__global__ void accumulate_rows_kernel(int rows, const float* __restrict__ row_loss,
                                       const int* __restrict__ row_correct, RowSums* sums) {
  __shared__ double loss[kSumThreads];
  __shared__ unsigned long long correct[kSumThreads], bad[kSumThreads];
  double l = 0;
  unsigned long long c = 0, b = 0;
  for (int i = threadIdx.x; i < rows; i += kSumThreads) {
    if (row_correct[i] < 0)
      ++b;
    else
      l += row_loss[i], c += static_cast<unsigned long long>(row_correct[i]);
  }
  loss[threadIdx.x] = l, correct[threadIdx.x] = c, bad[threadIdx.x] = b;
  __syncthreads();
  for (int stride = kSumThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      loss[threadIdx.x] += loss[threadIdx.x + stride];
      correct[threadIdx.x] += correct[threadIdx.x + stride];
      bad[threadIdx.x] += bad[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    sums->loss += loss[0];
    sums->correct += correct[0];
    sums->rows += static_cast<unsigned long long>(rows);
    sums->bad_labels += bad[0];
  }
}

}  // namespace

void softmax_cross_entropy(DType type, int n, int valid_rows, int classes, const float* logits,
                           const std::int64_t* labels, float smoothing, float grad_scale, void* dlogits,
                           float* row_loss, int* row_correct, cudaStream_t stream, const std::string& layer) {
  const unsigned blocks = static_cast<unsigned>((n + kWarpsPerBlock - 1) / kWarpsPerBlock);
  dispatch(type, [&]<class T>() {
    softmax_cross_entropy_kernel<T><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(
        n, valid_rows, classes, logits, labels, smoothing, grad_scale, static_cast<T*>(dlogits), row_loss,
        row_correct);
  });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (softmax cross-entropy)");
}

void accumulate_rows(int rows, const float* row_loss, const int* row_correct, RowSums* sums,
                     cudaStream_t stream, const std::string& layer) {
  accumulate_rows_kernel<<<1, kSumThreads, 0, stream>>>(rows, row_loss, row_correct, sums);
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (evaluation sums)");
}

}  // namespace conveyor::nn::kernels
