// The cuDNN twin of Pool2d (cudnnPoolingForward / cudnnPoolingBackward on NHWC tensors).
#pragma once

#include <string>

#include "src/train/layers/cuda_context.h"
#include "src/train/layers/pooling.h"

namespace conveyor::nn {

class Pool2dCudnn final : public Pool2d {
 public:
  Pool2dCudnn(CudaContext& cuda, std::string name, PoolGeometry geometry, PoolMode mode, bool global);
  void forward(const Tensor& x, const Tensor& y) const override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) const override;

 private:
  CudaContext& cuda_;
  TensorDescriptor x_desc_, y_desc_;
  PoolingDescriptor pool_desc_;
};

}  // namespace conveyor::nn
