// The state behind conveyor::train::Trainer (trainer.cpp holds its flow, which is the same on every
// backend; backend.h makes the backend at warm-up).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "conveyor/ops/normalize.h"
#include "conveyor/train/trainer.h"
#include "src/train/backend.h"
#include "src/train/layers/context.h"
#include "src/train/network.h"
#include "src/train/parameters.h"
#include "src/train/step_backend.h"

namespace conveyor::train {

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
  int device_in_use() const noexcept { return ctx ? ctx->device() : -1; }

  TrainerOptions options;
  NetworkDescription description;  // options.network, or what options.model stands for
  ParameterLayout layout;
  // The context is declared before everything that holds its memory, so that it is destroyed after.
  std::unique_ptr<nn::Context> ctx;
  std::unique_ptr<StepBackend> step_backend;  // made with the context
  Network network;                            // fills `layout`, so it comes before `params`
  ParameterStore params;
  WarmupReport warmup_report;
  float loss_scale = 1;
  std::size_t steps = 0;
  std::vector<double> step_ms;  // completed steps' durations
  StepHooks hooks;              // set before warmup()

  // What the model takes: options' mean and std, the precision's element type (fp32 on the CPU), NHWC.
  ops::NormalizeParams normalize_params() const;

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
  // Opens the algorithm cache the options ask for (timed search only).
  void open_algorithm_cache();
  void report_algorithm_cache();
  nn::cpu::SgdHyper hyper() const;
  // Throws when evaluation met labels out of range.
  void check_labels(std::size_t bad, std::size_t rows) const;
};

}  // namespace conveyor::train
