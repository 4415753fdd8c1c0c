#include "src/train/layers/pooling_cudnn.h"

namespace conveyor::nn {

PoolCudnn::PoolCudnn(CudaContext& cuda, std::string name, Shape4 input, Shape4 output, PoolMode mode,
                     int window_h, int window_w, int pad, int stride_h, int stride_w)
    : name_(std::move(name)),
      x_desc_(make_nhwc_descriptor(input, cuda.dtype(), name_)),
      y_desc_(make_nhwc_descriptor(output, cuda.dtype(), name_)) {
  // Average pooling counts the padding, as PyTorch's default (count_include_pad=True) and the CPU reference.
  const cudnnPoolingMode_t cudnn_mode =
      mode == PoolMode::max ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  CONVEYOR_CUDNN(cudnnSetPooling2dDescriptor(pool_desc_.get(), cudnn_mode, CUDNN_NOT_PROPAGATE_NAN, window_h,
                                             window_w, pad, pad, stride_h, stride_w),
                 name_);
}

void PoolCudnn::forward(CudaContext& cuda, const Tensor& x, const Tensor& y) const {
  const float one = 1.f, zero = 0.f;
  CONVEYOR_CUDNN(cudnnPoolingForward(cuda.cudnn(), pool_desc_.get(), &one, x_desc_.get(), x.data, &zero,
                                     y_desc_.get(), y.data),
                 name_ + " (forward)");
}

void PoolCudnn::backward(CudaContext& cuda, const Tensor& x, const Tensor& y, const Tensor& dy,
                         const Tensor& dx) const {
  const float one = 1.f, zero = 0.f;
  CONVEYOR_CUDNN(
      cudnnPoolingBackward(cuda.cudnn(), pool_desc_.get(), &one, y_desc_.get(), y.data, y_desc_.get(),
                           dy.data, x_desc_.get(), x.data, &zero, x_desc_.get(), dx.data),
      name_ + " (backward)");
}

}  // namespace conveyor::nn
