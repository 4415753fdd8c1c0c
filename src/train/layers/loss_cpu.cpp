// CPU reference of softmax cross-entropy (optionally label-smoothed), and the CPU twin of the loss layer
// over it.
#include "src/train/layers/loss_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"
#include "src/train/layers/cpu_parallel.h"

namespace conveyor::nn::cpu {

template <class T>
CrossEntropyResult softmax_cross_entropy(int n, int classes, const T* logits, const std::int64_t* labels,
                                         T* dlogits, double grad_scale, double label_smoothing) {
  for (int i = 0; i < n; ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      throw InvalidArgument("label " + std::to_string(labels[i]) + " of row " + std::to_string(i) +
                            " is outside [0, " + std::to_string(classes) + ")");
  std::vector<double> row_loss(n);
  std::vector<char> row_correct(n);
  parallel_ranges(static_cast<std::size_t>(n), 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const T* z = logits + i * classes;
      const auto label = static_cast<int>(labels[i]);
      const int best = static_cast<int>(std::max_element(z, z + classes) - z);
      const double top = z[best];
      double sum = 0, logit_sum = 0;
      for (int k = 0; k < classes; ++k) {
        sum += std::exp(static_cast<double>(z[k]) - top);
        logit_sum += static_cast<double>(z[k]);
      }
      // -log p_k = log(sum) + top - z_k; the smoothed target spreads label_smoothing evenly over all k.
      const double log_partition = std::log(sum) + top, s = label_smoothing;
      row_loss[i] = (1 - s) * (log_partition - static_cast<double>(z[label])) +
                    s * (log_partition - logit_sum / classes);
      row_correct[i] = best == label;
      if (dlogits) {
        const double off = s / classes, on = 1 - s + off;
        for (int k = 0; k < classes; ++k) {
          const double p = std::exp(static_cast<double>(z[k]) - top) / sum;
          dlogits[i * classes + k] = static_cast<T>((p - (k == label ? on : off)) * grad_scale);
        }
      }
    }
  });
  CrossEntropyResult result;
  for (int i = 0; i < n; ++i) {
    result.loss_sum += row_loss[i];
    result.correct += row_correct[i] ? 1 : 0;
  }
  return result;
}

template CrossEntropyResult softmax_cross_entropy<float>(int, int, const float*, const std::int64_t*, float*,
                                                         double, double);
template CrossEntropyResult softmax_cross_entropy<double>(int, int, const double*, const std::int64_t*,
                                                          double*, double, double);

}  // namespace conveyor::nn::cpu

namespace conveyor::nn {

void SoftmaxCrossEntropyCpu::run(const float* logits, const std::int64_t* labels, int valid_rows,
                                 float grad_scale, void* dlogits, float* row_loss, int* row_correct,
                                 float label_smoothing) const {
  const int n = batch(), k = classes();
  auto* grad = static_cast<float*>(dlogits);
  if (grad) std::fill(grad, grad + static_cast<std::size_t>(n) * k, 0.f);
  for (int i = 0; i < valid_rows; ++i) {
    const std::size_t row = static_cast<std::size_t>(i) * k;
    if (labels[i] < 0 || labels[i] >= k) {
      row_loss[i] = std::numeric_limits<float>::quiet_NaN();
      row_correct[i] = -1;
      continue;
    }
    const cpu::CrossEntropyResult r = cpu::softmax_cross_entropy(
        1, k, logits + row, labels + i, grad ? grad + row : nullptr, grad_scale, label_smoothing);
    row_loss[i] = static_cast<float>(r.loss_sum);
    row_correct[i] = static_cast<int>(r.correct);
  }
}

}  // namespace conveyor::nn
