// The CUDA twin of SoftmaxCrossEntropy: one kernel (loss.cu) for the rows' loss, correctness and gradient.
#pragma once

#include "src/train/layers/cuda_context.h"
#include "src/train/layers/loss.h"

namespace conveyor::nn {

class SoftmaxCrossEntropyCuda final : public SoftmaxCrossEntropy {
 public:
  SoftmaxCrossEntropyCuda(CudaContext& cuda, std::string name, int batch, int classes)
      : SoftmaxCrossEntropy(std::move(name), batch, classes), cuda_(cuda) {}

 private:
  void run(const float* logits, const std::int64_t* labels, int valid_rows, float grad_scale, void* dlogits,
           float* row_loss, int* row_correct, float label_smoothing) const override;
  CudaContext& cuda_;
};

}  // namespace conveyor::nn
