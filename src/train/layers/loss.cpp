#include "src/train/layers/loss.h"

#include "conveyor/error.h"

namespace conveyor::nn {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(std::string name, int batch, int classes)
    : name_(std::move(name)), batch_(batch), classes_(classes) {
  if (batch < 1 || classes < 2) throw InvalidArgument(name_ + ": needs a batch and at least two classes");
}

void SoftmaxCrossEntropy::forward_backward(const float* logits, const std::int64_t* labels, int valid_rows,
                                           float grad_scale, void* dlogits, float* row_loss, int* row_correct,
                                           float label_smoothing) const {
  if (valid_rows < 0 || valid_rows > batch_) throw InvalidArgument(name_ + ": more rows than the batch");
  run(logits, labels, valid_rows, grad_scale, dlogits, row_loss, row_correct, label_smoothing);
}

}  // namespace conveyor::nn
