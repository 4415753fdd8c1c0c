#include "src/train/layers/cpu_context.h"

#include <oneapi/tbb/task_arena.h>

#include <cstring>
#include <vector>

#include "src/train/layers/batch_norm_cpu.h"
#include "src/train/layers/conv2d_cpu.h"
#include "src/train/layers/dense_cpu.h"
#include "src/train/layers/loss_cpu.h"
#include "src/train/layers/pooling_cpu.h"
#include "src/train/layers/sgd_cpu.h"

namespace conveyor::nn {
namespace {

// Host memory as doubles: 8-byte alignment for every element type used.
struct HostStorage final : Storage {
  explicit HostStorage(std::size_t bytes) : words((bytes + sizeof(double) - 1) / sizeof(double), 0.0) {}
  std::vector<double> words;
};

}  // namespace

Buffer CpuContext::allocate(std::size_t bytes, std::string_view) {
  if (bytes == 0) return {};
  auto storage = std::make_unique<HostStorage>(bytes);
  void* data = storage->words.data();
  return {std::move(storage), data, bytes};
}

void CpuContext::copy_in(void* to, const void* host, std::size_t bytes, std::string_view) {
  if (bytes) std::memcpy(to, host, bytes);
}

void CpuContext::copy_out(void* host, const void* from, std::size_t bytes, std::string_view) {
  if (bytes) std::memcpy(host, from, bytes);
}

std::string CpuContext::describe() const {
  return "CPU reference, " + std::to_string(tbb::this_task_arena::max_concurrency()) + " threads, fp32 NHWC";
}

std::unique_ptr<Conv2d> CpuContext::make_conv2d(std::string name, const ConvGeometry& geometry,
                                                bool needs_input_grad) {
  return std::make_unique<Conv2dCpu>(std::move(name), geometry, needs_input_grad);
}

std::unique_ptr<BatchNorm> CpuContext::make_batch_norm(std::string name, Shape4 shape,
                                                       BatchNormOptions options) {
  return std::make_unique<BatchNormCpu>(*this, std::move(name), shape, options);
}

std::unique_ptr<Pool2d> CpuContext::make_pool2d(std::string name, PoolGeometry geometry, PoolMode mode) {
  return std::make_unique<Pool2dCpu>(std::move(name), geometry, mode, false);
}

std::unique_ptr<Pool2d> CpuContext::make_global_average_pool(std::string name, Shape4 input) {
  return std::make_unique<Pool2dCpu>(std::move(name), PoolGeometry{input, 1, 1, 0}, PoolMode::average, true);
}

std::unique_ptr<Dense> CpuContext::make_dense(std::string name, int batch, int in_features,
                                              int out_features) {
  return std::make_unique<DenseCpu>(std::move(name), batch, in_features, out_features);
}

std::unique_ptr<SoftmaxCrossEntropy> CpuContext::make_loss(std::string name, int batch, int classes) {
  return std::make_unique<SoftmaxCrossEntropyCpu>(std::move(name), batch, classes);
}

std::unique_ptr<Sgd> CpuContext::make_sgd() { return std::make_unique<SgdCpu>(); }

}  // namespace conveyor::nn
