// The cuDNN twin of Pool2d (cudnnPoolingForward / cudnnPoolingBackward on NHWC tensors).
#pragma once

#include <string>

#include "src/train/layers/cuda_context.h"
#include "src/train/layers/pooling.h"

namespace conveyor::nn {

class PoolCudnn {
 public:
  PoolCudnn(CudaContext& cuda, std::string name, Shape4 input, Shape4 output, PoolMode mode, int window_h,
            int window_w, int pad, int stride_h, int stride_w);
  void forward(CudaContext& cuda, const Tensor& x, const Tensor& y) const;
  void backward(CudaContext& cuda, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor& dx) const;

 private:
  std::string name_;
  TensorDescriptor x_desc_, y_desc_;
  PoolingDescriptor pool_desc_;
};

}  // namespace conveyor::nn
