// The loss layer's interface: softmax cross-entropy of the classifier's float32 logits. Its twins are the
// CPU reference (loss_cpu.h) and a CUDA kernel (loss_cuda.h); a Context makes the one of its backend.
#pragma once

#include <cstdint>
#include <string>

namespace conveyor::nn {

class SoftmaxCrossEntropy {
 public:
  virtual ~SoftmaxCrossEntropy() = default;
  SoftmaxCrossEntropy(const SoftmaxCrossEntropy&) = delete;
  SoftmaxCrossEntropy& operator=(const SoftmaxCrossEntropy&) = delete;

  const std::string& name() const noexcept { return name_; }
  int batch() const noexcept { return batch_; }
  int classes() const noexcept { return classes_; }

  // For each of the first valid_rows rows: row_loss = the cross-entropy of softmax(logits) against the
  // target (1 - label_smoothing) x one_hot(label) + label_smoothing / classes, row_correct = 1 when the
  // largest logit is the label's, 0 otherwise, -1 when the label is outside [0, classes) (and row_loss NaN).
  // When dlogits is not null it receives (softmax - target) * grad_scale in the context's type, zero for
  // the other rows. labels are int64 in the context's memory.
  void forward_backward(const float* logits, const std::int64_t* labels, int valid_rows, float grad_scale,
                        void* dlogits, float* row_loss, int* row_correct, float label_smoothing = 0.f) const;

 protected:
  SoftmaxCrossEntropy(std::string name, int batch, int classes);

 private:
  virtual void run(const float* logits, const std::int64_t* labels, int valid_rows, float grad_scale,
                   void* dlogits, float* row_loss, int* row_correct, float label_smoothing) const = 0;

  std::string name_;
  int batch_, classes_;
};

}  // namespace conveyor::nn
