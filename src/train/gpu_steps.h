// The GPU half of a Trainer's step: staging a batch (wait for its copy, take the labels, normalize the
// uint8 pixels on the GPU, release the batch), CUDA timing events around each step, and the optional
// CUDA graph that replays forward + backward + SGD with one launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/ops/normalize.h"
#include "src/device/cuda_handles.h"
#include "src/train/layers/context.h"

namespace conveyor::train {

class GpuSteps {
 public:
  GpuSteps(nn::Context& ctx, ImageShape shape, int batch);
  ~GpuSteps();
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

  // Records `body`'s work on `stream` into a graph (nothing runs), then replays it with launch_graph().
  void capture(cudaStream_t stream, const std::function<void()>& body);
  bool has_graph() const noexcept { return exec_ != nullptr; }
  void launch_graph(cudaStream_t stream);

 private:
  struct Timing {
    cuda::Event start{true}, end{true};
  };
  nn::Buffer staging_;  // pixels of a batch handed over in host memory
  std::vector<Timing> ring_;
  std::size_t next_ = 0;
  std::deque<std::size_t> pending_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace conveyor::train
