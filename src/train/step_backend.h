// The training step's interface: what a Trainer does around its network that depends on where it runs.
// Staging a batch into the network's input, timing steps, replaying the step and the evaluation as CUDA
// graphs, keeping the evaluation's sums. Its twins are the CPU reference (cpu_steps.h: everything runs to
// completion, wall-clock times, sums on the host) and the GPU (gpu_steps.h: everything enqueued on the
// context's stream, CUDA events, graphs, sums on the device); src/train/backend.h makes the one that goes
// with the context. The trainer's flow (trainer.cpp) is the same for both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/image.h"
#include "conveyor/ops/normalize.h"
#include "src/train/layers/tensor.h"

namespace conveyor::train {

// Evaluation sums since they were last taken.
struct EvaluationSums {
  double loss = 0;
  std::size_t correct = 0;
  std::size_t rows = 0;
  std::size_t bad_labels = 0;  // rows whose label was outside [0, classes)
};

class StepBackend {
 public:
  virtual ~StepBackend() = default;

  // After the network is prepared: the backend's own buffers for batches of `batch` images of `shape`.
  virtual void prepare(ImageShape shape, int batch) = 0;

  // Makes the first `count` images of `batch` the network's input and its labels the network's labels:
  // its uint8 pixels normalized with `params`, or, with `take_images`, its images() (already normalized so)
  // copied. The batch may be released as soon as the call returns.
  virtual void stage(const DeviceBatch& batch, std::size_t count, const ops::NormalizeParams& params,
                     bool take_images, const nn::Tensor& input, std::int64_t* labels) = 0;

  // Around one training step: begin_step() before staging (the GPU's stream waits for the batch's data
  // first, so that the wait is not counted), end_step() after. A step's time reaches `times_ms` at its end
  // (CPU) or once it has completed (GPU: collect_times()).
  virtual void begin_step(const DeviceBatch& batch, std::vector<double>& times_ms) = 0;
  virtual void end_step(std::vector<double>& times_ms) = 0;
  // Appends the times of the steps completed since (does not wait).
  virtual void collect_times(std::vector<double>& times_ms) = 0;

  // Whether this backend records work as CUDA graphs.
  virtual bool records_graphs() const noexcept = 0;
  // Records what `step` and `evaluation` enqueue (nothing runs). Throws Error when either cannot be
  // recorded, and then replays neither.
  virtual void record_graphs(const std::function<void()>& step, const std::function<void()>& evaluation) = 0;
  // Replays the recorded step (or evaluation of a full batch); false when none was recorded: the caller runs
  // the work itself.
  virtual bool replay_step() = 0;
  virtual bool replay_evaluation() = 0;

  // Adds the first `rows` rows of the network's last loss pass to the evaluation sums.
  virtual void add_rows(int rows, const float* row_loss, const int* row_correct) = 0;
  // The sums so far, which start again from zero (synchronises).
  virtual EvaluationSums take_sums() = 0;
  // The first `count` rows of the network's loss and correctness in host memory (synchronises): the
  // network's own on the CPU, copies on a GPU.
  virtual std::pair<const float*, const int*> rows_on_host(const float* row_loss, const int* row_correct,
                                                           std::size_t count) = 0;
};

}  // namespace conveyor::train
