#include "src/train/distributed/gradient_reducer.h"

#include <string>

#include "conveyor/error.h"

namespace conveyor::train {

GradientReducer::GradientReducer(nn::Context& ctx, ParameterStore& params, Communicator& comm,
                                 std::size_t bucket_bytes)
    : ctx_(ctx),
      params_(params),
      comm_(comm),
      buckets_(params.layout(), nn::element_size(params.gradients(ParamGroup::weights).type), bucket_bytes) {
  comm_.attach(ctx);
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

void GradientReducer::made(const ParamRef& ref) {
  const std::optional<std::size_t> completed = buckets_.made(ref);
  if (!completed) {
    comm_.progress();
    return;
  }
  const GradientBucket& bucket = buckets_.buckets()[*completed];
  const ParameterStore::ContextArray array = params_.gradients(bucket.group);
  const std::string what = "all-reduce of gradient bucket " + std::to_string(*completed);
  const ProgressWatch::Doing doing("beginning the all-reduce of gradient bucket",
                                   static_cast<long long>(*completed));
  comm_.fork();
  comm_.all_reduce_average(
      static_cast<std::uint8_t*>(array.data) + bucket.begin * nn::element_size(array.type),
      bucket.end - bucket.begin, array.type, what);
}

void GradientReducer::finish() {
  if (!buckets_.complete())
    throw Error(
        "data parallel: the backward pass ended before every gradient bucket was complete (a parameter "
        "whose gradient was never reported)");
  const ProgressWatch::Doing doing("waiting for the gradient all-reduces");
  comm_.join();
}

void GradientReducer::broadcast_state() {
  comm_.fork();
  for (const ParamGroup group : {ParamGroup::weights, ParamGroup::vectors, ParamGroup::statistics}) {
    const ParameterStore::ContextArray master = params_.master(group);
    if (master.count > 0)
      comm_.broadcast(master.data, master.count, nn::DType::f32, 0, "rank 0's parameters to every rank");
    if (group == ParamGroup::statistics) continue;
    const ParameterStore::ContextArray momentum = params_.momentum(group);
    if (momentum.count > 0)
      comm_.broadcast(momentum.data, momentum.count, nn::DType::f32, 0, "rank 0's momentum to every rank");
  }
  comm_.join();
  params_.refresh_working_copy(ctx_);
}

void GradientReducer::average_statistics() {
  const ParameterStore::ContextArray statistics = params_.master(ParamGroup::statistics);
  if (statistics.count == 0) return;
  comm_.fork();
  comm_.all_reduce_average(statistics.data, statistics.count, statistics.type,
                           "average of the batch-norm statistics");
  comm_.join();
}

}  // namespace conveyor::train
