// CPU reference of the classifier head: fully connected layer, softmax cross-entropy, ReLU and the
// residual add, and the SGD update.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"
#include "src/train/layers/cpu_parallel.h"

namespace conveyor::nn::cpu {

template <class T>
void relu_forward(std::size_t count, const T* x, T* y) {
  parallel_ranges(count, 4096, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
  });
}

template <class T>
void relu_backward(std::size_t count, const T* y, const T* dy, T* dx) {
  parallel_ranges(count, 4096, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
  });
}

template <class T>
void add_relu_forward(std::size_t count, const T* a, const T* b, T* y) {
  parallel_ranges(count, 4096, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const T sum = a[i] + b[i];
      y[i] = sum > T(0) ? sum : T(0);
    }
  });
}

template <class T>
void linear_forward(int n, int in, int out, const T* x, const T* w, const T* bias, T* y) {
  parallel_ranges(static_cast<std::size_t>(n), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i)
      for (int o = 0; o < out; ++o) {
        const T* xr = x + i * in;
        const T* wr = w + static_cast<std::size_t>(o) * in;
        T acc = bias ? bias[o] : T(0);
        for (int k = 0; k < in; ++k) acc += xr[k] * wr[k];
        y[i * out + o] = acc;
      }
  });
}

template <class T>
void linear_backward_data(int n, int in, int out, const T* dy, const T* w, T* dx) {
  parallel_ranges(static_cast<std::size_t>(n), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      T* dxr = dx + i * in;
      std::fill(dxr, dxr + in, T(0));
      for (int o = 0; o < out; ++o) {
        const T g = dy[i * out + o];
        const T* wr = w + static_cast<std::size_t>(o) * in;
        for (int k = 0; k < in; ++k) dxr[k] += g * wr[k];
      }
    }
  });
}

template <class T>
void linear_backward_weights(int n, int in, int out, const T* x, const T* dy, T* dw, T* dbias) {
  parallel_ranges(static_cast<std::size_t>(out), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t o = begin; o < end; ++o) {
      T* dwr = dw + o * in;
      std::fill(dwr, dwr + in, T(0));
      T db = T(0);
      for (int i = 0; i < n; ++i) {
        const T g = dy[static_cast<std::size_t>(i) * out + o];
        db += g;
        const T* xr = x + static_cast<std::size_t>(i) * in;
        for (int k = 0; k < in; ++k) dwr[k] += g * xr[k];
      }
      if (dbias) dbias[o] = db;
    }
  });
}

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

template <class T>
void sgd_update(std::size_t count, const T* grad, T* weight, T* velocity, const SgdHyper& h) {
  const T lr = static_cast<T>(h.learning_rate), mu = static_cast<T>(h.momentum),
          wd = static_cast<T>(h.weight_decay);
  parallel_ranges(count, 4096, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const T d = grad[i] + wd * weight[i];
      velocity[i] = mu * velocity[i] + d;
      weight[i] -= lr * (h.nesterov ? d + mu * velocity[i] : velocity[i]);
    }
  });
}

#define CONVEYOR_INSTANTIATE(T)                                                                             \
  template void relu_forward<T>(std::size_t, const T*, T*);                                                 \
  template void relu_backward<T>(std::size_t, const T*, const T*, T*);                                      \
  template void add_relu_forward<T>(std::size_t, const T*, const T*, T*);                                   \
  template void linear_forward<T>(int, int, int, const T*, const T*, const T*, T*);                         \
  template void linear_backward_data<T>(int, int, int, const T*, const T*, T*);                             \
  template void linear_backward_weights<T>(int, int, int, const T*, const T*, T*, T*);                      \
  template CrossEntropyResult softmax_cross_entropy<T>(int, int, const T*, const std::int64_t*, T*, double, \
                                                       double);                                             \
  template void sgd_update<T>(std::size_t, const T*, T*, T*, const SgdHyper&);
CONVEYOR_INSTANTIATE(float)
CONVEYOR_INSTANTIATE(double)
#undef CONVEYOR_INSTANTIATE

}  // namespace conveyor::nn::cpu
