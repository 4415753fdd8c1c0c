#include "src/train/gpu_steps.h"

#include "conveyor/cuda/stream.h"
#include "conveyor/error.h"
#include "src/device/cuda_check.h"
#include "src/device/normalize.h"
#include "src/train/layers/kernels.h"

namespace conveyor::train {

void GpuSteps::prepare(ImageShape shape, int batch) {
  staging_ =
      cuda_.allocate(shape.bytes() * static_cast<std::size_t>(batch), "staging for batches in host memory");
  sums_ = cuda_.allocate(sizeof(nn::kernels::RowSums), "evaluation sums");
  ring_ = std::vector<Timing>(64);
}

void GpuSteps::wait_for(const DeviceBatch& batch) {
  if (batch.on_device()) cuda::read_on(batch, cuda_.stream());
}

void GpuSteps::stage(const DeviceBatch& batch, std::size_t count, const ops::NormalizeParams& params,
                     bool take_images, const nn::Tensor& input, std::int64_t* labels) {
  const cudaStream_t stream = cuda_.stream();
  wait_for(batch);
  const ImageShape shape = batch.sample_shape();
  const auto* pixels = batch.pixels().as<const std::uint8_t>();
  const auto* batch_labels = batch.labels().as<const std::int64_t>();
  if (take_images) {
    // The feeder made the model's input: one copy instead of a normalize pass over the pixels.
    const std::size_t bytes = count * shape.bytes() * ops::element_size(params.type);
    const cudaMemcpyKind kind = batch.on_device() ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    CONVEYOR_CUDA(cudaMemcpyAsync(input.data, batch.images().data, bytes, kind, stream),
                  "trainer (copying the feeder's images)");
    CONVEYOR_CUDA(
        cudaMemcpyAsync(labels, batch_labels, count * sizeof(std::int64_t),
                        batch.on_device() ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice, stream),
        "trainer (copying labels)");
    // A batch in host memory may go back to its pool as soon as step() returns: copy it before that.
    if (!batch.on_device()) CONVEYOR_CUDA(cudaStreamSynchronize(stream), "trainer (copying a host batch)");
    return;
  }
  if (batch.on_device()) {
    CONVEYOR_CUDA(
        cudaMemcpyAsync(labels, batch_labels, count * sizeof(std::int64_t), cudaMemcpyDeviceToDevice, stream),
        "trainer (copying labels)");
  } else {
    // A batch in host memory may go back to its pool as soon as step() returns: copy it before that.
    CONVEYOR_CUDA(
        cudaMemcpyAsync(staging_.data(), pixels, count * shape.bytes(), cudaMemcpyHostToDevice, stream),
        "trainer (copying a host batch)");
    CONVEYOR_CUDA(
        cudaMemcpyAsync(labels, batch_labels, count * sizeof(std::int64_t), cudaMemcpyHostToDevice, stream),
        "trainer (copying labels)");
    CONVEYOR_CUDA(cudaStreamSynchronize(stream), "trainer (copying a host batch)");
    pixels = staging_.as<const std::uint8_t>();
  }
  ops::normalize_batch_cuda(pixels, count, shape, params, input.data, stream);
}

void GpuSteps::begin_step(const DeviceBatch& batch, std::vector<double>& times_ms) {
  wait_for(batch);  // before the step's start event: waiting for data is not GPU work
  if (pending_.size() == ring_.size()) {
    ring_[pending_.front()].end.synchronize();
    collect_times(times_ms);
  }
  ring_[next_].start.record(cuda_.stream());
}

void GpuSteps::end_step(std::vector<double>&) {
  ring_[next_].end.record(cuda_.stream());
  pending_.push_back(next_);
  next_ = (next_ + 1) % ring_.size();
}

void GpuSteps::collect_times(std::vector<double>& times_ms) {
  while (!pending_.empty() && ring_[pending_.front()].end.done()) {
    const Timing& t = ring_[pending_.front()];
    times_ms.push_back(cuda::Event::elapsed_ms(t.start, t.end));
    pending_.pop_front();
  }
}

void GpuSteps::record_graphs(const std::function<void()>& step, const std::function<void()>& evaluation) {
  step_graph_.reset();
  evaluation_graph_.reset();
  auto step_graph = std::make_unique<CudaGraph>(cuda_.stream(), step, "the training step's CUDA graph");
  evaluation_graph_ = std::make_unique<CudaGraph>(cuda_.stream(), evaluation, "the evaluation's CUDA graph");
  step_graph_ = std::move(step_graph);
}

bool GpuSteps::replay_step() {
  if (!step_graph_) return false;
  step_graph_->launch(cuda_.stream());
  return true;
}

bool GpuSteps::replay_evaluation() {
  if (!evaluation_graph_) return false;
  evaluation_graph_->launch(cuda_.stream());
  return true;
}

void GpuSteps::add_rows(int rows, const float* row_loss, const int* row_correct) {
  nn::kernels::accumulate_rows(rows, row_loss, row_correct, sums_.as<nn::kernels::RowSums>(), cuda_.stream(),
                               "evaluation");
}

EvaluationSums GpuSteps::take_sums() {
  const cudaStream_t stream = cuda_.stream();
  nn::kernels::RowSums sums{};
  CONVEYOR_CUDA(cudaMemcpyAsync(&sums, sums_.data(), sizeof sums, cudaMemcpyDeviceToHost, stream),
                "trainer (reading the evaluation sums)");
  CONVEYOR_CUDA(cudaMemsetAsync(sums_.data(), 0, sizeof sums, stream), "trainer (evaluation sums)");
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), "trainer (reading the evaluation sums)");
  return {sums.loss, static_cast<std::size_t>(sums.correct), static_cast<std::size_t>(sums.rows),
          static_cast<std::size_t>(sums.bad_labels)};
}

std::pair<const float*, const int*> GpuSteps::rows_on_host(const float* row_loss, const int* row_correct,
                                                           std::size_t count) {
  host_loss_.resize(count);
  host_correct_.resize(count);
  CONVEYOR_CUDA(cudaMemcpyAsync(host_loss_.data(), row_loss, count * sizeof(float), cudaMemcpyDeviceToHost,
                                cuda_.stream()),
                "trainer (reading the loss)");
  CONVEYOR_CUDA(cudaMemcpyAsync(host_correct_.data(), row_correct, count * sizeof(int),
                                cudaMemcpyDeviceToHost, cuda_.stream()),
                "trainer (reading the loss)");
  cuda_.synchronize();
  return {host_loss_.data(), host_correct_.data()};
}

}  // namespace conveyor::train
