// The CPU twin of StepBackend: batches in host memory normalized on oneTBB's threads, every step run to
// completion and timed by the wall clock, no graphs, evaluation sums on the host.
#pragma once

#include <chrono>

#include "src/train/step_backend.h"

namespace conveyor::train {

class CpuSteps final : public StepBackend {
 public:
  void prepare(ImageShape, int) override {}
  void stage(const DeviceBatch& batch, std::size_t count, const ops::NormalizeParams& params,
             bool take_images, const nn::Tensor& input, std::int64_t* labels) override;
  void begin_step(const DeviceBatch&, std::vector<double>&) override {
    start_ = std::chrono::steady_clock::now();
  }
  void end_step(std::vector<double>& times_ms) override;
  void collect_times(std::vector<double>&) override {}
  bool records_graphs() const noexcept override { return false; }
  void record_graphs(const std::function<void()>&, const std::function<void()>&) override {}
  bool replay_step() override { return false; }
  bool replay_evaluation() override { return false; }
  void add_rows(int rows, const float* row_loss, const int* row_correct) override;
  EvaluationSums take_sums() override;
  std::pair<const float*, const int*> rows_on_host(const float* row_loss, const int* row_correct,
                                                   std::size_t) override {
    return {row_loss, row_correct};
  }

 private:
  std::chrono::steady_clock::time_point start_;
  EvaluationSums sums_;
};

}  // namespace conveyor::train
