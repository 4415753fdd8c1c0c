// The CPU twin of SoftmaxCrossEntropy: the reference (loss_cpu.cpp), row by row, float32 gradients.
#pragma once

#include "src/train/layers/loss.h"

namespace conveyor::nn {

class SoftmaxCrossEntropyCpu final : public SoftmaxCrossEntropy {
 public:
  SoftmaxCrossEntropyCpu(std::string name, int batch, int classes)
      : SoftmaxCrossEntropy(std::move(name), batch, classes) {}

 private:
  void run(const float* logits, const std::int64_t* labels, int valid_rows, float grad_scale, void* dlogits,
           float* row_loss, int* row_correct, float label_smoothing) const override;
};

}  // namespace conveyor::nn
