// The GPU half of a Trainer's step: staging a batch (wait for its copy, take the labels, normalize the
// uint8 pixels on the GPU, release the batch), CUDA timing events around each step, the CUDA graphs that
// replay the step (forward, loss, backward, SGD) and evaluation's forward pass with one launch each, and
// the evaluation sums kept on the device.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/ops/normalize.h"
#include "src/device/cuda_handles.h"
#include "src/train/cuda_graph.h"
#include "src/train/layers/context.h"
#include "src/train/layers/kernels.h"

namespace conveyor::train {

class GpuSteps {
 public:
  GpuSteps(nn::Context& ctx, ImageShape shape, int batch);
  GpuSteps(const GpuSteps&) = delete;
  GpuSteps& operator=(const GpuSteps&) = delete;

  // Makes the stream a reader of a batch on the device, so it waits for the batch's data (stage() does it
  // too; calling it first keeps the wait out of the step's timing).
  void wait_for(const DeviceBatch& batch, cudaStream_t stream);
  // Waits for the batch, copies the first `count` labels (and, for a batch in host memory, the pixels)
  // into the step's own buffers and normalizes the pixels into `input`. The batch's memory is not reused
  // before the stream has passed the point where the batch is released.
  void stage(nn::Context& ctx, const DeviceBatch& batch, std::size_t count,
             const ops::NormalizeParams& params, const nn::Tensor& input, std::int64_t* labels);

  // Timing events around one step (a ring: when it is full the oldest step is waited for and its time
  // appended to times_ms).
  void begin_step(cudaStream_t stream, std::vector<double>& times_ms);
  void end_step(cudaStream_t stream);
  // Appends the durations of the steps that have completed (does not wait for the others).
  void collect(std::vector<double>& times_ms);

  // Records `step` and `evaluation` (what they enqueue on `stream`; nothing runs) as two CUDA graphs.
  // Throws when either cannot be captured, and then holds neither.
  void capture(cudaStream_t stream, const std::function<void()>& step,
               const std::function<void()>& evaluation);
  // Null when not captured.
  const CudaGraph* step_graph() const noexcept { return step_graph_.get(); }
  const CudaGraph* evaluation_graph() const noexcept { return evaluation_graph_.get(); }

  // Adds the first `rows` rows of a loss pass to the evaluation sums (enqueues only).
  void add_rows(cudaStream_t stream, int rows, const float* row_loss, const int* row_correct);
  // The sums so far, which start again from zero (synchronises).
  nn::kernels::RowSums take_sums(cudaStream_t stream);

 private:
  struct Timing {
    cuda::Event start{true}, end{true};
  };
  nn::Buffer staging_;  // pixels of a batch handed over in host memory
  nn::Buffer sums_;     // nn::kernels::RowSums
  std::vector<Timing> ring_;
  std::size_t next_ = 0;
  std::deque<std::size_t> pending_;
  std::unique_ptr<CudaGraph> step_graph_, evaluation_graph_;
};

}  // namespace conveyor::train
