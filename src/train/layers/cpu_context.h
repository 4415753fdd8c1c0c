// The CPU reference backend: every tensor float32 in host memory, every layer the plain loops of
// conveyor/train/nn/reference.h on oneTBB's threads, run to completion by each call.
#pragma once

#include "src/train/layers/context.h"
#include "src/train/layers/elementwise_cpu.h"

namespace conveyor::nn {

class CpuContext final : public Context {
 public:
  CpuContext() noexcept : Context(DType::f32, -1) {}

  Buffer allocate(std::size_t bytes, std::string_view what_for) override;
  void copy_in(void* to, const void* host, std::size_t bytes, std::string_view what) override;
  void copy_out(void* host, const void* from, std::size_t bytes, std::string_view what) override;
  void allocate_workspace() override {}
  void synchronize() const override {}
  std::string describe() const override;
  bool has_first_call_costs() const noexcept override { return false; }

  void use_algorithm_cache(const std::filesystem::path&) override {}
  AlgorithmCache* algorithm_cache() noexcept override { return nullptr; }
  bool chooses_without_timing(const ConvGeometry&, bool) const override { return true; }

  std::unique_ptr<Conv2d> make_conv2d(std::string name, const ConvGeometry& geometry,
                                      bool needs_input_grad) override;
  std::unique_ptr<BatchNorm> make_batch_norm(std::string name, Shape4 shape,
                                             BatchNormOptions options) override;
  std::unique_ptr<Pool2d> make_pool2d(std::string name, PoolGeometry geometry, PoolMode mode) override;
  std::unique_ptr<Pool2d> make_global_average_pool(std::string name, Shape4 input) override;
  std::unique_ptr<Dense> make_dense(std::string name, int batch, int in_features, int out_features) override;
  std::unique_ptr<SoftmaxCrossEntropy> make_loss(std::string name, int batch, int classes) override;
  std::unique_ptr<Sgd> make_sgd() override;
  const Elementwise& elementwise() const noexcept override { return elementwise_; }

 private:
  ElementwiseCpu elementwise_;
};

}  // namespace conveyor::nn
