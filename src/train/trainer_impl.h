// The state behind conveyor::train::Trainer (trainer.cpp holds the backend-independent flow).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "conveyor/ops/normalize.h"
#include "conveyor/train/trainer.h"
#include "src/train/layers/context.h"
#include "src/train/network.h"
#include "src/train/parameters.h"

#ifdef CONVEYOR_HAVE_CUDA
#include "src/device/cuda_handles.h"
#include "src/train/gpu_steps.h"
#else
namespace conveyor::train {
class GpuSteps {};  // never created without CUDA
}  // namespace conveyor::train
#endif

namespace conveyor::train {

// Makes the trainer's GPU current for a public call and restores the caller's afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
#ifdef CONVEYOR_HAVE_CUDA
    if (device >= 0) guard_.emplace(device);
#else
    (void)device;
#endif
  }

 private:
#ifdef CONVEYOR_HAVE_CUDA
  std::optional<cuda::DeviceGuard> guard_;
#endif
};

// What data-parallel training (src/train/distributed/) adds to a step; every member may be empty (the
// single-GPU trainer sets none). They run on the host while the step is enqueued, also while the step is
// captured as a CUDA graph, so what they enqueue becomes part of the graph.
struct StepHooks {
  // Once the layers are prepared (context, parameters and activations exist), before the warm-up's
  // throwaway step.
  std::function<void()> prepared;
  std::function<void()> before_backward;
  GradientReady gradient_ready;  // per parameter, as the backward pass makes its gradient
  // After the backward pass, before the optimizer: makes the step's stream wait for what the hooks began.
  std::function<void()> before_update;
};

class Trainer::Impl {
 public:
  explicit Impl(TrainerOptions options);

  void warmup();
  void step(const DeviceBatch& batch);
  void set_learning_rate(double learning_rate);
  StepStats last_step();
  void add_to_evaluation(const DeviceBatch& batch);
  EvalResult take_evaluation();
  void collect_times();
  std::string placement() const;
  // The device to make current for a call: the trainer's once it holds GPU state, none before.
  int device_in_use() const noexcept { return ctx ? options.device : -1; }

  TrainerOptions options;
  NetworkSpec spec;
  ParameterLayout layout;
  // The context is declared before everything that holds its memory, so that it is destroyed after.
  std::unique_ptr<nn::Context> ctx;
  std::unique_ptr<GpuSteps> gpu;
  Network network;  // fills `layout`, so it comes before `params`
  ParameterStore params;
  WarmupReport warmup_report;
  float loss_scale = 1;
  std::size_t steps = 0;
  std::vector<double> step_ms;  // completed steps' durations
  StepHooks hooks;              // set before warmup()

 private:
  // Normalized pixels into the network's input and labels into its label buffer.
  void stage(const DeviceBatch& batch, std::size_t count);
  // Drops everything held on the context and the context itself (after a failed warm-up).
  void release() noexcept;
  void check_batch(const DeviceBatch& batch, std::size_t min_size) const;
  void run_step_body();
  void run_evaluation_body();
  // Records the step and evaluation as CUDA graphs; on failure the trainer stays eager, with the reason.
  void capture_graphs();
  // Opens the algorithm cache the options ask for (GPU, timed search only).
  void open_algorithm_cache();
  void report_algorithm_cache();
  nn::cpu::SgdHyper hyper() const;

 public:
  // What the model takes: options' mean and std, the precision's element type (fp32 on the CPU), NHWC.
  ops::NormalizeParams normalize_params() const;

 private:
  // Sums of the first `count` rows of the loss and correctness; throws on an out-of-range label.
  std::pair<double, std::size_t> read_rows(std::size_t count);
  std::vector<float> host_loss_;
  std::vector<int> host_correct_;
  // Throws when evaluation met labels out of range.
  void check_labels(std::size_t bad, std::size_t rows) const;
  EvalResult cpu_sums_;  // the CPU reference's evaluation sums (a GPU keeps them on the device)
  std::size_t cpu_bad_labels_ = 0;
};

}  // namespace conveyor::train
