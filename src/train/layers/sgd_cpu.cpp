// CPU reference of the SGD update (torch.optim.SGD with momentum, weight decay, optionally Nesterov), and
// the CPU twin of the Sgd optimizer over it.
#include "src/train/layers/sgd_cpu.h"

#include <string>

#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"
#include "src/train/layers/cpu_parallel.h"

namespace conveyor::nn::cpu {

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

template void sgd_update<float>(std::size_t, const float*, float*, float*, const SgdHyper&);
template void sgd_update<double>(std::size_t, const double*, double*, double*, const SgdHyper&);

}  // namespace conveyor::nn::cpu

namespace conveyor::nn {

void SgdCpu::update(DType grad_type, std::size_t count, const void* grad, float* master, float* velocity,
                    void* working, const char* what) {
  // The CPU reference's gradients are float32 and its master weights are the weights the layers read.
  if (grad_type != DType::f32 || working != nullptr)
    throw InvalidArgument(std::string(what) + ": the CPU reference updates float32 weights in place");
  cpu::sgd_update(count, static_cast<const float*>(grad), master, velocity, hyper_);
}

}  // namespace conveyor::nn
