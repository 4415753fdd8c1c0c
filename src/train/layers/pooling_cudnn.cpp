#include "src/train/layers/pooling_cudnn.h"

namespace conveyor::nn {

Pool2dCudnn::Pool2dCudnn(CudaContext& cuda, std::string name, PoolGeometry geometry, PoolMode mode,
                         bool global)
    : Pool2d(std::move(name), geometry, mode, global),
      cuda_(cuda),
      x_desc_(make_nhwc_descriptor(geometry.input, cuda.dtype(), this->name())),
      y_desc_(make_nhwc_descriptor(output_shape(), cuda.dtype(), this->name())) {
  // Global pooling is a window of the whole image.
  const Shape4 in = geometry.input;
  const int window_h = global ? in.h : geometry.window, window_w = global ? in.w : geometry.window;
  const int stride_h = global ? in.h : geometry.stride, stride_w = global ? in.w : geometry.stride;
  const int pad = global ? 0 : geometry.pad;
  // Average pooling counts the padding, as PyTorch's default (count_include_pad=True) and the CPU reference.
  const cudnnPoolingMode_t cudnn_mode =
      mode == PoolMode::max ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  CONVEYOR_CUDNN(cudnnSetPooling2dDescriptor(pool_desc_.get(), cudnn_mode, CUDNN_NOT_PROPAGATE_NAN, window_h,
                                             window_w, pad, pad, stride_h, stride_w),
                 this->name());
}

void Pool2dCudnn::forward(const Tensor& x, const Tensor& y) const {
  const float one = 1.f, zero = 0.f;
  CONVEYOR_CUDNN(cudnnPoolingForward(cuda_.cudnn(), pool_desc_.get(), &one, x_desc_.get(), x.data, &zero,
                                     y_desc_.get(), y.data),
                 name() + " (forward)");
}

void Pool2dCudnn::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) const {
  const float one = 1.f, zero = 0.f;
  CONVEYOR_CUDNN(
      cudnnPoolingBackward(cuda_.cudnn(), pool_desc_.get(), &one, y_desc_.get(), y.data, y_desc_.get(),
                           dy.data, x_desc_.get(), x.data, &zero, x_desc_.get(), dx.data),
      name() + " (backward)");
}

}  // namespace conveyor::nn
