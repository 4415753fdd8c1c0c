// The CPU twin of Sgd: the reference update (sgd_cpu.cpp) with the settings kept on the host.
#pragma once

#include "src/train/layers/sgd.h"

namespace conveyor::nn {

class SgdCpu final : public Sgd {
 public:
  // The CPU reference computes in fp32: there is no loss scale to divide out.
  void set_hyper(const cpu::SgdHyper& hyper, float) override { hyper_ = hyper; }
  void update(DType grad_type, std::size_t count, const void* grad, float* master, float* velocity,
              void* working, const char* what) override;

 private:
  cpu::SgdHyper hyper_;
};

}  // namespace conveyor::nn
