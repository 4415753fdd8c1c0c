// The cuDNN twin of Pool2d (cudnnPoolingForward / cudnnPoolingBackward on NHWC tensors).
#pragma once

#ifdef CONVEYOR_HAVE_CUDA

#include <string>

#include "ops/nn/cuda_context.h"
#include "ops/nn/pooling.h"

namespace conveyor::nn {

class PoolCudnn {
 public:
  PoolCudnn(CudaContext& cuda, std::string name, Shape4 input, Shape4 output, PoolMode mode, int window_h,
            int window_w, int pad, int stride_h, int stride_w);
  void forward(CudaContext& cuda, const Tensor& x, const Tensor& y) const;
  void backward(CudaContext& cuda, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) const;

 private:
  std::string name_;
  TensorDescriptor x_desc_, y_desc_;
  PoolingDescriptor pool_desc_;
};

}  // namespace conveyor::nn

#endif  // CONVEYOR_HAVE_CUDA
