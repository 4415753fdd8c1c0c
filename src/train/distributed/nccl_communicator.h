// The GPU's communicator: NCCL, bootstrapped by NCCL itself (nccl_bootstrap.h), on a nonblocking
// communicator (nccl_handle.h) watched by a thread that aborts it when its collectives stop making progress
// (collective_watch.h).
//
// Every collective runs on a communication stream of the device's highest priority (the all-reduces are
// short and sit on the step's critical path at its end: the GPU should start them as soon as their inputs
// are ready rather than after the backward kernels queued before them), ordered after the step's stream by
// an event (fork) and before whatever the step's stream does next by another (join). One stream for all of
// a communicator's work keeps its collectives in issue order on the GPU, so two of them never run at once.
// In a captured step the forks, the all-reduces and the join are part of the CUDA graph.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/ranks.h"
#include "src/device/cuda_handles.h"
#include "src/device/device_memory.h"
#include "src/train/distributed/collective_watch.h"
#include "src/train/distributed/communicator.h"
#include "src/train/distributed/nccl_handle.h"

namespace conveyor::nn {
class CudaContext;
}

namespace conveyor::train {

class NcclCommunicator final : public Communicator {
 public:
  // Rank ranks.rank of ranks.world_size on GPU `device`: makes NCCL's id (nccl_bootstrap.h) and the
  // communicator, returning when every rank has joined (see NcclHandle for the errors).
  // `abort_grace`: DataParallelOptions::abort_grace (CollectiveWatch).
  NcclCommunicator(const Ranks& ranks, int device, std::chrono::milliseconds connect_timeout,
                   std::chrono::milliseconds collective_timeout, std::chrono::milliseconds abort_grace);
  ~NcclCommunicator() override;

  std::string describe() const override;
  void attach(nn::Context& context) override;
  void fork() override;
  void all_reduce_average(void* data, std::size_t count, nn::DType type, const std::string& what) override;
  void broadcast(void* data, std::size_t count, nn::DType type, int root, const std::string& what) override;
  void join() override;
  void after_step() override;
  void check() override { check_usable(); }
  void average_on_host(std::span<double> values) override;
  void barrier() override;
  void abandon() noexcept override;

 private:
  // Throws the watch's reason when it aborted the communicator.
  void check_usable() const;
  bool capturing() const;

  std::string bootstrap_;  // how the ranks met: "MPI_Bcast", "NCCL_COMM_ID=..."
  int device_;
  std::chrono::milliseconds collective_timeout_;
  std::unique_ptr<NcclHandle> handle_;
  std::unique_ptr<CollectiveWatch> watch_;  // after handle_: stopped before the communicator goes
  // Made by attach(): the step's context, and what the communicator keeps of its own on the device (it
  // outlives the trainer's context, whose memory pool goes with it): the communication stream with its
  // events, and a few doubles for average_on_host() from a pool of its own.
  nn::CudaContext* context_ = nullptr;
  std::optional<cuda::DeviceMemoryPool> pool_;
  std::optional<cuda::Stream> stream_;
  std::vector<cuda::Event> forks_;  // one per fork between two joins: each is its own edge of a graph
  std::size_t forks_used_ = 0;
  std::optional<cuda::Event> joined_;
  cuda::DeviceBuffer values_;  // given back on stream_, which it precedes in destruction
  std::size_t steps_ = 0;
};

}  // namespace conveyor::train
