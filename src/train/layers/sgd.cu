// SGD with momentum and weight decay on float32 master weights, torch.optim.SGD's arithmetic. One pass
// reads the gradient (in the working type), updates master weights and velocity, and writes the working
// copy the next step's convolutions read, so there is no separate conversion pass.
#include "src/device/cuda_check.h"
#include "src/train/layers/device_math.cuh"
#include "src/train/layers/kernels.h"

namespace conveyor::nn::kernels {
namespace {

constexpr unsigned kThreads = 256;

template <class G>
__global__ void sgd_kernel(std::size_t count, const G* __restrict__ grad, float* __restrict__ master,
                           float* __restrict__ velocity, G* __restrict__ working,
                           const SgdDeviceHyper* hyper) {
  const SgdDeviceHyper h = *hyper;
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float w = master[e];
    const float d = to_float(grad[e]) * h.inverse_loss_scale + h.weight_decay * w;
    const float v = h.momentum * velocity[e] + d;
    velocity[e] = v;
    w -= h.learning_rate * (h.nesterov ? d + h.momentum * v : v);
    master[e] = w;
    if (working) working[e] = from_float<G>(w);
  }
}

__global__ void set_hyper_kernel(SgdDeviceHyper* hyper, SgdDeviceHyper value) { *hyper = value; }

}  // namespace

void set_sgd_hyper(SgdDeviceHyper* device_hyper, const SgdDeviceHyper& value, cudaStream_t stream) {
  set_hyper_kernel<<<1, 1, 0, stream>>>(device_hyper, value);
  CONVEYOR_CUDA(cudaGetLastError(), "SGD hyper-parameters");
}

void sgd_update(DType grad_type, std::size_t count, const void* grad, float* master, float* velocity,
                void* working, const SgdDeviceHyper* hyper, cudaStream_t stream, const std::string& layer) {
  if (count == 0) return;
  dispatch(grad_type, [&]<class G>() {
    sgd_kernel<G><<<grid_for(count, kThreads), kThreads, 0, stream>>>(
        count, static_cast<const G*>(grad), master, velocity, static_cast<G*>(working), hyper);
  });
  CONVEYOR_CUDA(cudaGetLastError(), layer + " (SGD update)");
}

}  // namespace conveyor::nn::kernels
