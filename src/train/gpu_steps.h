// The GPU twin of StepBackend: staging a batch (wait for its copy, take the labels, normalize the uint8
// pixels on the GPU, release the batch), CUDA timing events around each step, the CUDA graphs that replay
// the step (forward, loss, backward, SGD) and evaluation's forward pass with one launch each, and the
// evaluation sums kept on the device. Everything is enqueued on the context's stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "src/device/cuda_handles.h"
#include "src/train/cuda_graph.h"
#include "src/train/layers/cuda_context.h"
#include "src/train/step_backend.h"

namespace conveyor::train {

class GpuSteps final : public StepBackend {
 public:
  explicit GpuSteps(nn::CudaContext& cuda) noexcept : cuda_(cuda) {}
  GpuSteps(const GpuSteps&) = delete;
  GpuSteps& operator=(const GpuSteps&) = delete;

  // Staging memory for batches handed over in host memory, and the evaluation sums.
  void prepare(ImageShape shape, int batch) override;
  // Waits for the batch, copies the first `count` labels (and, for a batch in host memory, the pixels)
  // into the step's own buffers and normalizes the pixels into `input`, or, with `take_images`, copies the
  // batch's images() (already normalized as `params`) there. The batch's memory is not reused before the
  // stream has passed the point where the batch is released.
  void stage(const DeviceBatch& batch, std::size_t count, const ops::NormalizeParams& params,
             bool take_images, const nn::Tensor& input, std::int64_t* labels) override;

  // The stream becomes a reader of the batch, then a timing event (a ring: when it is full the oldest step
  // is waited for and its time appended to times_ms).
  void begin_step(const DeviceBatch& batch, std::vector<double>& times_ms) override;
  void end_step(std::vector<double>& times_ms) override;
  void collect_times(std::vector<double>& times_ms) override;

  bool records_graphs() const noexcept override { return true; }
  void record_graphs(const std::function<void()>& step, const std::function<void()>& evaluation) override;
  bool replay_step() override;
  bool replay_evaluation() override;

  void add_rows(int rows, const float* row_loss, const int* row_correct) override;
  EvaluationSums take_sums() override;
  std::pair<const float*, const int*> rows_on_host(const float* row_loss, const int* row_correct,
                                                   std::size_t count) override;

 private:
  struct Timing {
    cuda::Event start{true}, end{true};
  };
  // Makes the stream a reader of a batch on the device, so it waits for the batch's data.
  void wait_for(const DeviceBatch& batch);

  nn::CudaContext& cuda_;
  nn::Buffer staging_;  // pixels of a batch handed over in host memory
  nn::Buffer sums_;     // nn::kernels::RowSums
  std::vector<Timing> ring_;
  std::size_t next_ = 0;
  std::deque<std::size_t> pending_;
  std::unique_ptr<CudaGraph> step_graph_, evaluation_graph_;
  std::vector<float> host_loss_;
  std::vector<int> host_correct_;
};

}  // namespace conveyor::train
