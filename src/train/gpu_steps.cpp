#include "src/train/gpu_steps.h"

#include "conveyor/cuda/stream.h"
#include "conveyor/error.h"
#include "src/device/cuda_check.h"
#include "src/device/normalize.h"

namespace conveyor::train {

GpuSteps::GpuSteps(nn::Context& ctx, ImageShape shape, int batch)
    : staging_(ctx.allocate(shape.bytes() * static_cast<std::size_t>(batch),
                            "staging for batches in host memory")),
      sums_(ctx.allocate(sizeof(nn::kernels::RowSums), "evaluation sums")),
      ring_(64) {}

void GpuSteps::wait_for(const DeviceBatch& batch, cudaStream_t stream) {
  if (batch.on_device()) cuda::read_on(batch, stream);
}

void GpuSteps::stage(nn::Context& ctx, const DeviceBatch& batch, std::size_t count,
                     const ops::NormalizeParams& params, const nn::Tensor& input, std::int64_t* labels) {
  const cudaStream_t stream = ctx.stream();
  wait_for(batch, stream);
  const ImageShape shape = batch.sample_shape();
  const auto* pixels = batch.pixels().as<const std::uint8_t>();
  const auto* batch_labels = batch.labels().as<const std::int64_t>();
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

void GpuSteps::begin_step(cudaStream_t stream, std::vector<double>& times_ms) {
  if (pending_.size() == ring_.size()) {
    ring_[pending_.front()].end.synchronize();
    collect(times_ms);
  }
  ring_[next_].start.record(stream);
}

void GpuSteps::end_step(cudaStream_t stream) {
  ring_[next_].end.record(stream);
  pending_.push_back(next_);
  next_ = (next_ + 1) % ring_.size();
}

void GpuSteps::collect(std::vector<double>& times_ms) {
  while (!pending_.empty() && ring_[pending_.front()].end.done()) {
    const Timing& t = ring_[pending_.front()];
    times_ms.push_back(cuda::Event::elapsed_ms(t.start, t.end));
    pending_.pop_front();
  }
}

void GpuSteps::capture(cudaStream_t stream, const std::function<void()>& step,
                       const std::function<void()>& evaluation) {
  step_graph_.reset();
  evaluation_graph_.reset();
  auto step_graph = std::make_unique<CudaGraph>(stream, step, "the training step's CUDA graph");
  evaluation_graph_ = std::make_unique<CudaGraph>(stream, evaluation, "the evaluation's CUDA graph");
  step_graph_ = std::move(step_graph);
}

void GpuSteps::add_rows(cudaStream_t stream, int rows, const float* row_loss, const int* row_correct) {
  nn::kernels::accumulate_rows(rows, row_loss, row_correct, sums_.as<nn::kernels::RowSums>(), stream,
                               "evaluation");
}

nn::kernels::RowSums GpuSteps::take_sums(cudaStream_t stream) {
  nn::kernels::RowSums sums{};
  CONVEYOR_CUDA(cudaMemcpyAsync(&sums, sums_.data(), sizeof sums, cudaMemcpyDeviceToHost, stream),
                "trainer (reading the evaluation sums)");
  CONVEYOR_CUDA(cudaMemsetAsync(sums_.data(), 0, sizeof sums, stream), "trainer (evaluation sums)");
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), "trainer (reading the evaluation sums)");
  return sums;
}

}  // namespace conveyor::train
