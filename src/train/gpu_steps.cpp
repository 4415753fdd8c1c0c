#include "src/train/gpu_steps.h"

#include "conveyor/cuda/stream.h"
#include "conveyor/error.h"
#include "src/device/cuda_check.h"
#include "src/device/normalize.h"

namespace conveyor::train {

GpuSteps::GpuSteps(nn::Context& ctx, ImageShape shape, int batch)
    : staging_(ctx.allocate(shape.bytes() * static_cast<std::size_t>(batch),
                            "staging for batches in host memory")),
      ring_(64) {}

GpuSteps::~GpuSteps() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

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

void GpuSteps::capture(cudaStream_t stream, const std::function<void()>& body) {
  // Relaxed: cuDNN and cuBLAS may make harmless runtime calls (attribute queries) while being captured.
  CONVEYOR_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), "trainer (capturing the step)");
  try {
    body();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  CONVEYOR_CUDA(cudaStreamEndCapture(stream, &graph_), "trainer (capturing the step)");
  CONVEYOR_CUDA(cudaGraphInstantiate(&exec_, graph_, 0), "trainer (instantiating the step's graph)");
}

void GpuSteps::launch_graph(cudaStream_t stream) {
  CONVEYOR_CUDA(cudaGraphLaunch(exec_, stream), "trainer (replaying the step's graph)");
}

}  // namespace conveyor::train
