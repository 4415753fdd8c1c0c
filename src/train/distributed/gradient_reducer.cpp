#include "src/train/distributed/gradient_reducer.h"

#include <string>

#include "conveyor/error.h"
#include "src/device/cuda_check.h"

namespace conveyor::train {
namespace {

constexpr std::size_t kMaxValues = 8;  // average(): doubles at once

ncclDataType_t nccl_type(nn::DType type) {
  switch (type) {
    case nn::DType::f32:
      return ncclFloat32;
    case nn::DType::f16:
      return ncclFloat16;
    case nn::DType::bf16:
      return ncclBfloat16;
  }
  throw InvalidArgument("data parallel: no NCCL type for this element type");
}

int highest_stream_priority() {
  int least = 0, greatest = 0;
  CONVEYOR_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest), "data parallel (stream priorities)");
  return greatest;
}

}  // namespace

GradientReducer::GradientReducer(nn::CudaContext& ctx, ParameterStore& params, NcclCommunicator& comm,
                                 std::size_t bucket_bytes)
    : ctx_(ctx),
      params_(params),
      comm_(comm),
      buckets_(params.layout(), nn::element_size(params.gradients(ParamGroup::weights).type), bucket_bytes),
      // The all-reduces are short and sit on the step's critical path at its end: the GPU should start
      // them as soon as their inputs are ready rather than after the backward kernels queued before them.
      stream_(highest_stream_priority()) {
  completed_.reserve(buckets_.buckets().size());
  for (std::size_t i = 0; i < buckets_.buckets().size(); ++i) completed_.emplace_back();
}

void GradientReducer::attach(StepHooks& hooks) {
  hooks.before_backward = [this] {
    phase_.reset();
    phase_.emplace("backward pass, all-reduces of the buckets as they complete");
    begin_step();
  };
  hooks.gradient_ready = [this](const ParamRef& ref) { made(ref); };
  hooks.before_update = [this] {
    phase_.reset();
    finish();
  };
}

void GradientReducer::fork() {
  forked_.record(ctx_.stream());
  CONVEYOR_CUDA(cudaStreamWaitEvent(stream_.get(), forked_.get(), 0),
                "data parallel (ordering a collective)");
}

void GradientReducer::join() {
  joined_.record(stream_.get());
  CONVEYOR_CUDA(cudaStreamWaitEvent(ctx_.stream(), joined_.get(), 0),
                "data parallel (waiting for a collective)");
}

void GradientReducer::all_reduce_average(const ParameterStore::ContextArray& array, std::size_t begin,
                                         std::size_t end, const char* what) {
  auto* data = static_cast<std::uint8_t*>(array.data) + begin * nn::element_size(array.type);
  CONVEYOR_NCCL(
      ncclAllReduce(data, data, end - begin, nccl_type(array.type), ncclAvg, comm_.get(), stream_.get()),
      std::string("data parallel (") + what + ")", comm_.get());
}

void GradientReducer::made(const ParamRef& ref) {
  const std::optional<std::size_t> completed = buckets_.made(ref);
  if (!completed) return;
  const GradientBucket& bucket = buckets_.buckets()[*completed];
  // Its own event per bucket: the wait below takes the event's state at the time of the call, and each
  // bucket's fork is a separate edge of a captured graph.
  completed_[*completed].record(ctx_.stream());
  CONVEYOR_CUDA(cudaStreamWaitEvent(stream_.get(), completed_[*completed].get(), 0),
                "data parallel (gradient bucket " + std::to_string(*completed) + ")");
  const std::string what = "all-reduce of gradient bucket " + std::to_string(*completed);
  const ProgressWatch::Doing doing("enqueueing the NCCL all-reduce of gradient bucket",
                                   static_cast<long long>(*completed));
  all_reduce_average(params_.gradients(bucket.group), bucket.begin, bucket.end, what.c_str());
}

void GradientReducer::finish() {
  if (!buckets_.complete())
    throw Error(
        "data parallel: the backward pass ended before every gradient bucket was complete (a parameter "
        "whose gradient was never reported)");
  join();
}

void GradientReducer::broadcast_state() {
  fork();
  for (const ParamGroup group : {ParamGroup::weights, ParamGroup::vectors, ParamGroup::statistics}) {
    const ParameterStore::ContextArray master = params_.master(group);
    if (master.count > 0)
      CONVEYOR_NCCL(
          ncclBroadcast(master.data, master.data, master.count, ncclFloat32, 0, comm_.get(), stream_.get()),
          "data parallel (rank 0's parameters to every replica)", comm_.get());
    if (group == ParamGroup::statistics) continue;
    const ParameterStore::ContextArray momentum = params_.momentum(group);
    if (momentum.count > 0)
      CONVEYOR_NCCL(ncclBroadcast(momentum.data, momentum.data, momentum.count, ncclFloat32, 0, comm_.get(),
                                  stream_.get()),
                    "data parallel (rank 0's momentum to every replica)", comm_.get());
  }
  join();
  params_.refresh_working_copy(ctx_);
}

void GradientReducer::average_statistics() {
  const ParameterStore::ContextArray statistics = params_.master(ParamGroup::statistics);
  if (statistics.count == 0) return;
  fork();
  all_reduce_average(statistics, 0, statistics.count, "average of the batch-norm statistics");
  join();
}

void GradientReducer::average(std::span<double> values) {
  if (values.size() > kMaxValues) throw InvalidArgument("data parallel: too many values to average at once");
  // Made on first use, after warm-up: a warm-up that fails drops the context and everything it lent.
  if (!values_.data()) values_ = ctx_.allocate(kMaxValues * sizeof(double), "data parallel: values averaged");
  const cudaStream_t stream = ctx_.stream();
  CONVEYOR_CUDA(
      cudaMemcpyAsync(values_.data(), values.data(), values.size_bytes(), cudaMemcpyHostToDevice, stream),
      "data parallel (averaging the loss)");
  fork();
  CONVEYOR_NCCL(ncclAllReduce(values_.data(), values_.data(), values.size(), ncclFloat64, ncclAvg,
                              comm_.get(), stream_.get()),
                "data parallel (average of the loss)", comm_.get());
  join();
  CONVEYOR_CUDA(
      cudaMemcpyAsync(values.data(), values_.data(), values.size_bytes(), cudaMemcpyDeviceToHost, stream),
      "data parallel (averaging the loss)");
  ctx_.synchronize();
}

}  // namespace conveyor::train
