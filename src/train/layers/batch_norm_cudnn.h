// The GPU twin of BatchNorm. Three paths, picked at prepare():
//   fused:       cudnnBatchNormalizationForwardTrainingEx / BackwardEx with the add and ReLU folded in
//                (CUDNN_BATCHNORM_OPS_BN[_ADD]_ACTIVATION, NHWC, SPATIAL_PERSISTENT): one kernel each way;
//   cudnn_plain: cudnnBatchNormalizationForwardTraining / Backward, then our ReLU (and add) kernels,
//                when cuDNN declines the fused configuration for this shape or type;
//   own:         our separate mean, variance, normalize, ReLU kernels (the unfused baseline, and the
//                last fallback when cuDNN declines plain batch norm too).
#pragma once

#include <string>

#include "src/train/layers/batch_norm.h"
#include "src/train/layers/cuda_context.h"

namespace conveyor::nn {

class BatchNormCudnn {
 public:
  enum class Path { fused, cudnn_plain, own };

  BatchNormCudnn(Context& ctx, std::string name, Shape4 shape, BatchNormOptions options);

  void prepare(Context& ctx, const Tensor& x, const Tensor* z, const Tensor& y, const Tensor& dy,
               const Tensor& dx, const Tensor* dz, const BatchNormParams& params);
  void forward_training(CudaContext& cuda, const Tensor& x, const Tensor* z, const Tensor& y,
                        const BatchNormParams& params);
  void forward_inference(CudaContext& cuda, const Tensor& x, const Tensor* z, const Tensor& y,
                         const BatchNormParams& params) const;
  void backward(CudaContext& cuda, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const Tensor* dz, const BatchNormParams& params);

  Path path() const noexcept { return path_; }
  std::string describe() const;

 private:
  // A cuDNN status with the name of the call that produced it, so that a path can be tried at warm-up
  // (CUDNN_STATUS_NOT_SUPPORTED means: fall back) and checked with the real call's name at run time.
  struct Status {
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    const char* call = "";
  };
  Status run_forward_training(CudaContext& cuda, const Tensor& x, const Tensor* z, const Tensor& y,
                              const BatchNormParams& params);
  Status run_forward_inference(CudaContext& cuda, const Tensor& x, const Tensor* z, const Tensor& y,
                               const BatchNormParams& params) const;
  Status run_backward(CudaContext& cuda, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                      const Tensor* dz, const BatchNormParams& params);
  // Sizes and allocates the fused path's workspace and reserve space; false when cuDNN declines.
  bool allocate_fused(Context& ctx);
  void check(const Status& status, const char* direction) const;

  std::string name_;
  Shape4 shape_;
  BatchNormOptions options_;
  DType dtype_;
  Path path_;
  TensorDescriptor x_desc_, param_desc_;
  ActivationDescriptor relu_;
  Buffer saved_mean_, saved_inv_std_;  // float x channels
  Buffer workspace_, reserve_;         // fused path
  Buffer relu_grad_;                   // plain and own paths, ReLU without residual
  Buffer partials_;                    // own path
  std::string declined_;               // why cuDNN's path was left at warm-up, if it was
};

}  // namespace conveyor::nn
