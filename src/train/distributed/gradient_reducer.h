// One rank's side of data-parallel training, the same on every backend: the gradient all-reduce, bucket by
// bucket as the backward pass completes the buckets, joined before the optimizer; and the collectives
// outside the step (rank 0's state to every rank, averages of the statistics and of the step's loss). How a
// collective is ordered after the step's work, and carried, is the communicator's business
// (communicator.h: NCCL streams and events on a GPU, nonblocking MPI on the CPU).
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "conveyor/progress_watch.h"
#include "src/train/distributed/communicator.h"
#include "src/train/distributed/gradient_buckets.h"
#include "src/train/layers/context.h"
#include "src/train/parameters.h"
#include "src/train/trainer_impl.h"

namespace conveyor::train {

class GradientReducer {
 public:
  // For the trainer whose context and parameters these are (bound: their arrays exist); `comm` is its
  // communicator, attached to the context here. Enqueues nothing.
  GradientReducer(nn::Context& ctx, ParameterStore& params, Communicator& comm, std::size_t bucket_bytes);
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // The step's hooks (StepHooks without `prepared`), calling the three below.
  void attach(StepHooks& hooks);

  void begin_step() noexcept { buckets_.start_step(); }
  // A gradient is final in the step's order: when that completes a bucket, its all-reduce begins.
  void made(const ParamRef& ref);
  // The step's later work waits for every bucket's all-reduce. Error when a bucket was never completed.
  void finish();

  // Rank 0's master weights, vectors, statistics and momentum replace this rank's; the working copy is
  // rebuilt from them. In the context's order.
  void broadcast_state();
  // Each batch-norm running statistic becomes its average over all ranks. In the context's order.
  void average_statistics();

  const GradientBuckets& buckets() const noexcept { return buckets_; }

 private:
  nn::Context& ctx_;
  ParameterStore& params_;
  Communicator& comm_;
  GradientBuckets buckets_;
  // What the training thread is in, between the step's hooks, for a stall report (progress_watch.h).
  std::optional<ProgressWatch::Doing> phase_;
};

}  // namespace conveyor::train
