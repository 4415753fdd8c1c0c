// The optimizer's interface: SGD with momentum and weight decay on float32 master weights, exactly as
// torch.optim.SGD (nn::cpu::sgd_update). Its twins are the CPU reference (sgd_cpu.h) and a CUDA kernel
// (sgd_cuda.h) that reads its settings from device memory, so that a step replayed as a CUDA graph uses
// the settings of the moment; a Context makes the one of its backend.
#pragma once

#include <cstddef>

#include "conveyor/train/nn/reference.h"
#include "src/train/layers/tensor.h"

namespace conveyor::nn {

class Sgd {
 public:
  virtual ~Sgd() = default;

  // The settings every later update() uses (on a GPU written in stream order), and the scale the gradients
  // carry (fp16 loss scaling; divided out first).
  virtual void set_hyper(const cpu::SgdHyper& hyper, float loss_scale) = 0;
  // One update of `count` master weights and their momentum from gradients in `grad_type`; when `working` is
  // not null the updated weights are also written there in `grad_type`. `what` names the array in errors.
  virtual void update(DType grad_type, std::size_t count, const void* grad, float* master, float* velocity,
                      void* working, const char* what) = 0;
};

}  // namespace conveyor::nn
