// One replica's side of data-parallel training: the gradient all-reduce, bucket by bucket, on a stream of
// its own as the backward pass completes the buckets, joined before the optimizer; and the collectives
// outside the step (rank 0's state to every replica, averages of the statistics and of the step's loss).
//
// Every collective runs on the communication stream, ordered after the step's stream by an event and
// before whatever the step's stream does next by another. One stream for all of a communicator's work
// keeps its collectives in issue order on the GPU, so two of them never run at once.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "conveyor/progress_watch.h"
#include "src/device/cuda_handles.h"
#include "src/train/distributed/gradient_buckets.h"
#include "src/train/distributed/nccl_communicator.h"
#include "src/train/layers/cuda_context.h"
#include "src/train/parameters.h"
#include "src/train/trainer_impl.h"

namespace conveyor::train {

class GradientReducer {
 public:
  // For the replica whose context and parameters these are (bound: their arrays exist); `comm` is its
  // communicator. Makes the streams and events and a small buffer; enqueues nothing.
  GradientReducer(nn::CudaContext& ctx, ParameterStore& params, NcclCommunicator& comm,
                  std::size_t bucket_bytes);
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // The step's hooks (StepHooks without `prepared`), calling the three below.
  void attach(StepHooks& hooks);

  void begin_step() noexcept { buckets_.start_step(); }
  // A gradient is final on the step's stream: when that completes a bucket, its all-reduce is enqueued.
  void made(const ParamRef& ref);
  // The step's stream waits for every bucket's all-reduce. Error when a bucket was never completed.
  void finish();

  // Rank 0's master weights, vectors, statistics and momentum replace this replica's; the working copy is
  // rebuilt from them. Enqueued on the step's stream.
  void broadcast_state();
  // Each batch-norm running statistic becomes its average over all replicas. Enqueued.
  void average_statistics();
  // `values` (host) become their averages over all replicas. Synchronises.
  void average(std::span<double> values);

  const GradientBuckets& buckets() const noexcept { return buckets_; }

 private:
  // The communication stream waits for the step's stream to reach this point.
  void fork();
  // The step's stream waits for the communication stream's work so far.
  void join();
  void all_reduce_average(const ParameterStore::ContextArray& array, std::size_t begin, std::size_t end,
                          const char* what);

  nn::CudaContext& ctx_;
  ParameterStore& params_;
  NcclCommunicator& comm_;
  GradientBuckets buckets_;
  cuda::Stream stream_;                 // the communication stream, of the device's highest priority
  std::vector<cuda::Event> completed_;  // per bucket: its last gradient is made (step's stream)
  cuda::Event forked_, joined_;
  nn::Buffer values_;  // for average(): a few doubles on the device, from the context's pool
  // What the replica's thread is in, between the step's hooks, for a stall report (progress_watch.h).
  std::optional<ProgressWatch::Doing> phase_;
};

}  // namespace conveyor::train
