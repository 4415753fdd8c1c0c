// The CUDA twin of Sgd: the settings in device memory (written in stream order, so that a step replayed as
// a CUDA graph reads the new ones), the update one kernel per array (sgd.cu).
#pragma once

#include "src/train/layers/buffer.h"
#include "src/train/layers/cuda_context.h"
#include "src/train/layers/sgd.h"

namespace conveyor::nn {

class SgdCuda final : public Sgd {
 public:
  explicit SgdCuda(CudaContext& cuda);
  void set_hyper(const cpu::SgdHyper& hyper, float loss_scale) override;
  void update(DType grad_type, std::size_t count, const void* grad, float* master, float* velocity,
              void* working, const char* what) override;

 private:
  CudaContext& cuda_;
  Buffer hyper_;  // kernels::SgdDeviceHyper
};

}  // namespace conveyor::nn
