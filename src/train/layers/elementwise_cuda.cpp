#include "src/train/layers/elementwise_cuda.h"

#include "src/device/cuda_check.h"
#include "src/train/layers/kernels.h"

namespace conveyor::nn {

void ElementwiseCuda::relu_forward(const Tensor& x, const Tensor& y) const {
  kernels::relu_forward(x.dtype, x.count(), x.data, y.data, stream_, "ReLU");
}

void ElementwiseCuda::relu_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) const {
  kernels::relu_backward(y.dtype, y.count(), y.data, dy.data, dx.data, stream_, "ReLU");
}

void ElementwiseCuda::mirror_width(const Tensor& x) const {
  const Shape4 s = x.shape;
  kernels::mirror_width(x.dtype, s.n, s.h, s.w, s.c, x.data, stream_, "mirror image");
}

void ElementwiseCuda::copy_floats(const float* from, float* to, std::size_t count) const {
  CONVEYOR_CUDA(cudaMemcpyAsync(to, from, count * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
                "keeping the first pass's logits");
}

void ElementwiseCuda::average_into(float* x, const float* y, std::size_t count) const {
  kernels::average_into(count, x, y, stream_, "mean of two passes' logits");
}

void ElementwiseCuda::convert_from_float(DType type, std::size_t count, const float* src, void* dst) const {
  kernels::convert_from_float(type, count, src, dst, stream_, "parameters");
}

}  // namespace conveyor::nn
