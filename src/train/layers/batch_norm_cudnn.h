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

class BatchNormCudnn final : public BatchNorm {
 public:
  enum class Path { fused, cudnn_plain, own };

  BatchNormCudnn(CudaContext& cuda, std::string name, Shape4 shape, BatchNormOptions options);

  void prepare(const Tensor& x, const Tensor* z, const Tensor& y, const Tensor& dy, const Tensor& dx,
               const Tensor* dz, const BatchNormParams& params) override;
  void forward_training(const Tensor& x, const Tensor* z, const Tensor& y,
                        const BatchNormParams& params) override;
  void forward_inference(const Tensor& x, const Tensor* z, const Tensor& y,
                         const BatchNormParams& params) const override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const Tensor* dz,
                const BatchNormParams& params) override;

  Path chosen_path() const noexcept { return path_; }
  std::string path() const override;

 private:
  // A cuDNN status with the name of the call that produced it, so that a path can be tried at warm-up
  // (CUDNN_STATUS_NOT_SUPPORTED means: fall back) and checked with the real call's name at run time.
  struct Status {
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    const char* call = "";
  };
  Status run_forward_training(const Tensor& x, const Tensor* z, const Tensor& y,
                              const BatchNormParams& params);
  Status run_forward_inference(const Tensor& x, const Tensor* z, const Tensor& y,
                               const BatchNormParams& params) const;
  Status run_backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const Tensor* dz,
                      const BatchNormParams& params);
  // Sizes and allocates the fused path's workspace and reserve space; false when cuDNN declines.
  bool allocate_fused();
  void check(const Status& status, const char* direction) const;

  CudaContext& cuda_;
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
