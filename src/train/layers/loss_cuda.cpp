#include "src/train/layers/loss_cuda.h"

#include "src/train/layers/kernels.h"

namespace conveyor::nn {

void SoftmaxCrossEntropyCuda::run(const float* logits, const std::int64_t* labels, int valid_rows,
                                  float grad_scale, void* dlogits, float* row_loss, int* row_correct,
                                  float label_smoothing) const {
  kernels::softmax_cross_entropy(cuda_.dtype(), batch(), valid_rows, classes(), logits, labels,
                                 label_smoothing, grad_scale, dlogits, row_loss, row_correct, cuda_.stream(),
                                 name());
}

}  // namespace conveyor::nn
