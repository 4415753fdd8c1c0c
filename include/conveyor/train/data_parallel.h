// Data-parallel training: one process per GPU (or per share of a host's CPUs), each with its own replica of
// the model stepping on its own share of the data; the replicas' gradients are averaged after every step, so
// every rank takes the same SGD step and the weights stay identical everywhere. The same program runs on N
// GPUs or N CPU processes, on one host or many, as PyTorch's DistributedDataParallel does:
//
//   const conveyor::Ranks ranks = conveyor::ranks_from_environment();   // torchrun, mpirun or srun
//   options.device = placement.gpu ? ranks.local_rank : -1;            // a GPU per process, or the CPU
//   conveyor::train::DataParallelTrainer trainer(options, ranks);
//   auto data = dataset.shuffle(n, seed).shard(ranks).map(...).batch(256);  // equal batches per rank
//   for (DeviceBatch& batch : feeder.feed(data)) trainer.step(batch);
//
// Which engine carries what (docs/distributed.md):
//   GPUs   NCCL. Its communicator is bootstrapped by NCCL itself: under an MPI launcher (mpirun, or srun
//          --mpi=pmix) rank 0 makes the unique id and MPI_Bcast hands it out, as nccl-tests do; otherwise
//          (torchrun, scripts/launch.sh without MPI, srun) every rank gets the same id from NCCL_COMM_ID,
//          which the user may set and which is otherwise MASTER_ADDR:MASTER_PORT, or MASTER_PORT + 1 where
//          torchrun's agent holds MASTER_PORT itself (TORCHELASTIC_USE_AGENT_STORE=True).
//   CPUs   Open MPI, which needs its launcher (mpirun -np N, srun --mpi=pmix, scripts/launch.sh N where
//          mpirun is installed). A process started without one, alone, trains as a plain Trainer would.
// conveyor opens no socket of its own: NCCL and MPI do all the talking.
//
// The gradient path. The backward pass tells the trainer each time a parameter's gradient is final.
// Gradients are grouped in buckets of about DataParallelOptions::bucket_bytes (contiguous ranges of the flat
// gradient arrays, cut in the order the backward pass makes them); when a bucket's last gradient is made,
// its all-reduce (average) begins while the backward pass goes on with the next layers: on a GPU on a
// communication stream of the highest priority, ordered by events (and captured in the step's CUDA graph);
// on the CPU as an MPI_Iallreduce that the backward pass moves along between layers. Before the optimizer
// the step waits for every bucket; then every rank runs the same SGD update on the same averaged gradients.
//
// Batch norm uses each rank's own batch statistics (as DistributedDataParallel does without SyncBatchNorm),
// so a step of W ranks at batch B is not exactly a step of one process at batch W x B: the gradients are
// averaged exactly, the normalization differs by the statistics of B instead of W x B images. A network
// without batch norm follows the one process with the global batch within float rounding. The running
// statistics drift apart between ranks; average_statistics() averages them (call it before evaluating or
// saving).
//
// Every rank must make the same calls in the same order: warmup(), step(), last_step(), average_statistics()
// and barrier() are collectives. With one rank in all, the path through NCCL or MPI gives exactly the losses
// of a plain Trainer with the same options (deterministic mode).
//
// Faults end runs; they never hang them. Ranks that do not all meet within DataParallelOptions::
// connect_timeout (a rank that never starts, a wrong WORLD_SIZE, an unreachable MASTER_ADDR) end in a
// CollectiveError. A collective that makes no progress for collective_timeout (a rank killed or hung) aborts
// the communicator, and the next call of every rank still running throws a CollectiveError. The launchers
// act first where they can: mpirun, torchrun and scripts/launch.sh end every rank when one dies and name the
// one that did.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/error.h"
#include "conveyor/ranks.h"
#include "conveyor/train/trainer.h"

namespace conveyor::train {

// The ranks could not meet, or a collective failed or stopped making progress: what, on which rank, and
// what the engine (NCCL or MPI) said. The trainer cannot go on; on the CPU the MPI job ends when the
// process does (MPI_Abort: the other ranks may still wait in a collective).
class CollectiveError : public Error {
 public:
  using Error::Error;
};

struct DataParallelOptions {
  // Gradient bytes per all-reduce. Smaller buckets start reducing earlier in the backward pass; each costs
  // a launch and a few microseconds of latency. ResNet-18 in bf16 has 23 MB of weight gradients: six
  // buckets at the default.
  std::size_t bucket_bytes = std::size_t{4} << 20;
  // The longest the ranks may take to meet: every rank making its NCCL communicator (or, on the CPU, its
  // MPI communicator). Generous, because ranks start at different times on a cluster.
  std::chrono::milliseconds connect_timeout{std::chrono::minutes(2)};
  // The longest a collective may go without progress before the communicator is aborted. It must cover
  // the longest time one rank may spend apart from the others between two collectives (a rank 0 that saves
  // a checkpoint while the others go on to the next step waits here for it).
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(1)};
  // On GPUs: after the watch aborted a communicator whose collectives stopped, how long the rank has to end
  // on its own (its trainer's next call throws CollectiveError, and destroying the trainer tears the
  // communicator down). A rank still there then is ended with exit status 1 and the reason on stderr, as
  // PyTorch's ProcessGroupNCCL watchdog ends it: NCCL's abort can itself wait for kernels or a peer that are
  // gone, and a CUDA wait of the trainer's may never return. Zero: never ended (the rank may hang).
  std::chrono::milliseconds abort_grace{std::chrono::seconds(10)};
};
// The calling thread, when it joined a ProgressWatch (conveyor/progress_watch.h), says there what it waits
// for (its step, the backward pass, which all-reduce it begins), so that a run that stops names it.

class DataParallelTrainer {
 public:
  // This process is rank ranks.rank of ranks.world_size and trains on options.device: a GPU, or the CPU
  // (-1). Meets the other ranks here (see the top of this file): returns when every rank has made its
  // communicator. Throws InvalidArgument for ranks that cannot train together (CPU processes without an MPI
  // launcher, MPI's own world of another size than `ranks`, a GPU without NCCL's bootstrap address) and
  // CollectiveError when the ranks do not meet within connect_timeout.
  explicit DataParallelTrainer(TrainerOptions options, const Ranks& ranks = ranks_from_environment(),
                               DataParallelOptions parallel = {});
  // Aborts the communicator instead of waiting for the other ranks when destroyed while an exception
  // unwinds or after a failed collective.
  ~DataParallelTrainer();
  DataParallelTrainer(const DataParallelTrainer&) = delete;
  DataParallelTrainer& operator=(const DataParallelTrainer&) = delete;

  int world_size() const noexcept;
  int rank() const noexcept;

  // The trainer's warm-up (Trainer::warmup), the first all-reduces, and rank 0's weights, momentum and
  // statistics broadcast to every rank (ranks that were initialised or loaded differently start equal).
  // step() calls it when it was not called. Idempotent.
  void warmup();
  double warmup_seconds() const noexcept;

  // One step on this rank's batch (batch.size() == options.batch); the gradients are averaged over all ranks.
  void step(const DeviceBatch& batch);
  void set_learning_rate(double learning_rate);
  // Loss and accuracy of the last step, averaged over every rank (synchronises).
  StepStats last_step();
  // Sets every rank's batch-norm running statistics to their average over all ranks.
  void average_statistics();
  // Returns when every rank has called it as many times.
  void barrier();
  void synchronize();
  std::size_t steps() const noexcept;

  // This rank's replica: its placement, layers, step times, evaluate(), save_checkpoint() and
  // load_checkpoint(). Its own step() would train it alone: keep to this class's step().
  Trainer& trainer();
  // "data parallel over NCCL 2.28.9 (bootstrap: MPI_Bcast): rank 0 of 2, 6 gradient buckets ..." and the
  // replica's placement.
  std::string placement() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conveyor::train
