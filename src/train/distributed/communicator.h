// The collectives of data-parallel training, behind one interface with a twin per backend, chosen once
// (make_communicator, src/train/backend.h): NCCL on a GPU (nccl_communicator.h), Open MPI on the CPU
// (mpi_communicator.h), and nothing at all for a process that is the whole job (single_rank_communicator.h).
//
// A communicator works on its context's memory and in its context's order: collectives begin after the
// work the context has issued before fork(), and the context's work after join() sees their results. On a
// GPU that is event ordering between the step's stream and a communication stream, so nothing blocks the
// host and a CUDA graph can capture it all; on the CPU, where the context's work is done when its call
// returns, fork() has nothing to wait for and join() waits for the collectives on the host.
//
// Every rank issues the same collectives in the same order. A collective that cannot finish (a rank gone)
// is a CollectiveError within the communicator's timeout, never a hang; after one, every later call
// throws again, and the communicator ends without waiting for the other ranks.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "src/train/layers/context.h"
#include "src/train/layers/tensor.h"

namespace conveyor::train {

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  // "NCCL 2.28.9 (bootstrap: NCCL_COMM_ID=10.0.0.1:29500)", "Open MPI 4.1.4", "one rank".
  virtual std::string describe() const = 0;

  // Before the first collective on the context's memory: the context the trainer made at warm-up (its
  // memory, its stream). Called again after a failed warm-up made a new one.
  virtual void attach(nn::Context& context) = 0;

  // Collectives begun from here on start after the context's work so far.
  virtual void fork() = 0;
  // `count` elements of `type` at `data` (the context's memory) become their average over all ranks, in
  // place. Begun here; complete for the context's work issued after join(). `what` names it in errors.
  virtual void all_reduce_average(void* data, std::size_t count, nn::DType type, const std::string& what) = 0;
  // Rank `root`'s `count` elements at `data` replace every other rank's. Ordered as all_reduce_average.
  virtual void broadcast(void* data, std::size_t count, nn::DType type, int root,
                         const std::string& what) = 0;
  // The context's work issued from here on starts after every collective begun so far.
  virtual void join() = 0;
  // Lets begun collectives advance, between the backward pass's layers (MPI moves a nonblocking collective
  // only inside its calls; NCCL needs nothing).
  virtual void progress() {}
  // After each step is issued (its collectives replayed in a CUDA graph included): where the communicator
  // starts watching for the step's progress, and where an asynchronous failure is reported.
  virtual void after_step() {}
  // Throws the failure the communicator found on its own (a GPU communicator's watch aborted it), if any:
  // after a host wait for the context, whose results are not to be trusted then.
  virtual void check() {}

  // Host values become their averages over all ranks. Synchronises.
  virtual void average_on_host(std::span<double> values) = 0;
  // Returns once every rank has called it as many times.
  virtual void barrier() = 0;

  // The process leaves a collective half-done (an exception unwinds through the trainer): the other ranks
  // may never reach their side of it, so the communicator must end without waiting for them.
  virtual void abandon() noexcept = 0;

 protected:
  Communicator(int rank, int size) noexcept : rank_(rank), size_(size) {}

 private:
  int rank_, size_;
};

}  // namespace conveyor::train
