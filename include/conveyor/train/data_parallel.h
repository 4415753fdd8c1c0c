// Data-parallel training over NCCL: one replica of the Trainer's model per GPU, each stepping on its own
// share of the data; the replicas' gradients are averaged with NCCL all-reduces, so every replica takes the
// same SGD step and the weights stay identical everywhere. Two ways to run, as with PyTorch:
//
//   one process per GPU, started by a launcher (scripts/launch.sh, torchrun, mpirun) on one or more hosts:
//     const conveyor::Ranks ranks = conveyor::ranks_from_environment();
//     auto rendezvous = conveyor::train::connect_rendezvous(ranks);        // MASTER_ADDR:MASTER_PORT
//     conveyor::train::DataParallelTrainer trainer(options, *rendezvous);  // GPU: LOCAL_RANK
//     auto data = dataset.shuffle(n, seed).shard(ranks).map(...).batch(256);  // equal batches per rank
//     for (DeviceBatch& batch : feeder.feed(data)) trainer.step(batch);
//
//   one process driving several GPUs of one host (ncclCommInitAll):
//     conveyor::train::DataParallelTrainer trainer(options, {0, 1});
//     trainer.step(batches);  // one batch per GPU, batches[i] for GPU i
//
// The gradient path. The backward pass tells the replica's reducer each time a parameter's gradient is
// final. Gradients are grouped in buckets of about DataParallelOptions::bucket_bytes (contiguous ranges of
// the flat gradient arrays, cut in the order the backward pass makes them); when a bucket's last gradient
// has been enqueued, the step's stream records an event, a communication stream (of the highest priority)
// waits for it and runs ncclAllReduce(ncclAvg) over the bucket in place, while the backward pass goes on
// with the next layers. Before the optimizer the step's stream waits for the communication stream; then
// every replica runs the same SGD update on the same averaged gradients. In a captured step (cuda_graph)
// the fork, the all-reduces and the join are part of the graph. Every replica launches its buckets in the
// same order (the backward pass's), as NCCL requires.
//
// Batch norm uses each replica's own batch statistics (as PyTorch's DistributedDataParallel does without
// SyncBatchNorm), so a step of W replicas at batch B is not exactly a step of one GPU at batch W x B: the
// gradients are averaged exactly, the normalization differs by the statistics of B instead of W x B
// images. The running statistics drift apart between replicas; average_statistics() averages them (call
// it before evaluating or saving).
//
// Every rank must make the same calls in the same order: warmup(), step(), last_step() and
// average_statistics() are collectives. With one replica in all, the path through NCCL gives exactly the
// losses of a plain Trainer with the same options (deterministic mode).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/progress_watch.h"
#include "conveyor/train/rendezvous.h"
#include "conveyor/train/trainer.h"

namespace conveyor::train {

struct DataParallelOptions {
  // Gradient bytes per all-reduce. Smaller buckets start reducing earlier in the backward pass; each costs
  // a launch and a few microseconds of latency. ResNet-18 in bf16 has 23 MB of weight gradients: six
  // buckets at the default.
  std::size_t bucket_bytes = std::size_t{4} << 20;
  // The replicas' threads (one process driving several GPUs) join this watch and say what each waits for
  // (its step, the backward pass, which all-reduce it enqueues), so that a run that stops making progress
  // names them (conveyor/progress_watch.h). With one replica the caller's thread says it, if it joined.
  std::shared_ptr<ProgressWatch> progress_watch = nullptr;
};

class DataParallelTrainer {
 public:
  // One process per GPU: this process is rendezvous.ranks().rank of world_size and trains on GPU
  // options.device, or on its local rank when options.device is -1. Rank 0 makes the NCCL id and shares it
  // through the rendezvous; every rank makes its communicator from it. The rendezvous is only used here.
  DataParallelTrainer(TrainerOptions options, Rendezvous& rendezvous, DataParallelOptions parallel = {});
  // One process, one replica per device of `devices` (distinct CUDA device indices; options.device is
  // ignored). Each replica's work is issued by a thread of its own (NCCL needs every replica to reach a
  // collective; one thread issuing them one after another would wait in the first).
  DataParallelTrainer(TrainerOptions options, std::vector<int> devices, DataParallelOptions parallel = {});
  ~DataParallelTrainer();
  DataParallelTrainer(const DataParallelTrainer&) = delete;
  DataParallelTrainer& operator=(const DataParallelTrainer&) = delete;

  int world_size() const noexcept;              // replicas in the whole job
  int rank() const noexcept;                    // global rank of this process's first replica
  std::size_t local_replicas() const noexcept;  // 1 per process, or the devices given
  int device(std::size_t replica) const;        // CUDA device of a local replica

  // Every replica's warm-up (Trainer::warmup), the first all-reduces, and rank 0's weights, momentum and
  // statistics broadcast to every replica (replicas that were initialised or loaded differently start
  // equal). step() calls it when it was not called. Idempotent.
  void warmup();
  double warmup_seconds() const noexcept;

  // One step of the one local replica (one process per GPU): batch.size() == options.batch.
  void step(const DeviceBatch& batch);
  // One step of every local replica: batches[i] for replica i, batches.size() == local_replicas().
  void step(std::span<const DeviceBatch> batches);
  void set_learning_rate(double learning_rate);
  // Loss and accuracy of the last step, averaged over every replica of the job (synchronises).
  StepStats last_step();
  // Sets every replica's batch-norm running statistics to their average over all replicas.
  void average_statistics();
  void synchronize();
  std::size_t steps() const noexcept;

  // A local replica: its placement, layers, step times, evaluate(), save_checkpoint() and load_checkpoint().
  // Its step() is the data-parallel step of that replica alone (all-reduces included): keep to this class's
  // step().
  Trainer& replica(std::size_t i);
  // "data parallel over NCCL 2.x: rank 0 of 2, 1 replica here; 6 buckets ..." and replica 0's placement.
  std::string placement() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conveyor::train
