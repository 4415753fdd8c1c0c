// Softmax cross-entropy and its gradient in one pass: one warp per row, so the 10-way and the 1000-way
// classifiers both read their logits coalesced. The arg-max breaks ties towards the smaller class, as
// the CPU reference does.
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
                                             const std::int64_t* __restrict__ labels, float grad_scale,
                                             T* __restrict__ dlogits, float* row_loss, int* row_correct) {
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
  float sum = 0.f;
  for (int k = lane; k < classes; k += 32) sum += expf(z[k] - best);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const std::int64_t label = labels[row];
  if (label < 0 || label >= classes) {
    if (lane == 0) row_loss[row] = nanf(""), row_correct[row] = -1;
    if (grad)
      for (int k = lane; k < classes; k += 32) grad[k] = from_float<T>(0.f);
    return;
  }
  if (lane == 0) {
    row_loss[row] = logf(sum) + best - z[label];
    row_correct[row] = arg == label ? 1 : 0;
  }
  if (grad) {
    const float inv_sum = 1.f / sum;
    for (int k = lane; k < classes; k += 32) {
      const float p = expf(z[k] - best) * inv_sum;
      grad[k] = from_float<T>((p - (k == label ? 1.f : 0.f)) * grad_scale);
    }
  }
}

}  // namespace

void softmax_cross_entropy(DType type, int n, int valid_rows, int classes, const float* logits,
                           const std::int64_t* labels, float grad_scale, void* dlogits, float* row_loss,
                           int* row_correct, cudaStream_t stream, const std::string& layer) {
  const unsigned blocks = static_cast<unsigned>((n + kWarpsPerBlock - 1) / kWarpsPerBlock);
  dispatch(type, [&]<class T>() {
    softmax_cross_entropy_kernel<T><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(
        n, valid_rows, classes, logits, labels, grad_scale, static_cast<T*>(dlogits), row_loss, row_correct);
  });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (softmax cross-entropy)");
}

}  // namespace conveyor::nn::kernels
