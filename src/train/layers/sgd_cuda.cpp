#include "src/train/layers/sgd_cuda.h"

#include "src/train/layers/kernels.h"

namespace conveyor::nn {

SgdCuda::SgdCuda(CudaContext& cuda)
    : cuda_(cuda), hyper_(cuda.allocate(sizeof(kernels::SgdDeviceHyper), "SGD hyper-parameters")) {}

void SgdCuda::set_hyper(const cpu::SgdHyper& hyper, float loss_scale) {
  const kernels::SgdDeviceHyper h{static_cast<float>(hyper.learning_rate), static_cast<float>(hyper.momentum),
                                  static_cast<float>(hyper.weight_decay), 1.f / loss_scale,
                                  hyper.nesterov ? 1 : 0};
  kernels::set_sgd_hyper(hyper_.as<kernels::SgdDeviceHyper>(), h, cuda_.stream());
}

void SgdCuda::update(DType grad_type, std::size_t count, const void* grad, float* master, float* velocity,
                     void* working, const char* what) {
  kernels::sgd_update(grad_type, count, grad, master, velocity, working,
                      hyper_.as<const kernels::SgdDeviceHyper>(), cuda_.stream(), what);
}

}  // namespace conveyor::nn
