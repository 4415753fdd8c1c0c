#include "src/train/distributed/nccl_communicator.h"

#include "conveyor/error.h"
#include "conveyor/train/data_parallel.h"
#include "src/device/cuda_check.h"
#include "src/train/distributed/nccl_bootstrap.h"
#include "src/train/layers/cuda_context.h"

namespace conveyor::train {
namespace {

constexpr std::size_t kMaxValues = 8;  // average_on_host(): doubles at once

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

std::string where_of(const Ranks& ranks, int device) {
  return "data parallel over NCCL (rank " + std::to_string(ranks.rank) + " of " +
         std::to_string(ranks.world_size) + ", GPU " + std::to_string(device) + ")";
}

}  // namespace

NcclCommunicator::NcclCommunicator(const Ranks& ranks, int device, std::chrono::milliseconds connect_timeout,
                                   std::chrono::milliseconds collective_timeout,
                                   std::chrono::milliseconds abort_grace)
    : Communicator(ranks.rank, ranks.world_size), device_(device), collective_timeout_(collective_timeout) {
  const NcclBootstrap bootstrap = bootstrap_nccl(ranks, connect_timeout);
  bootstrap_ = bootstrap.how;
  handle_ =
      std::make_unique<NcclHandle>(bootstrap.id, ranks.world_size, ranks.rank, device, connect_timeout,
                                   collective_timeout, where_of(ranks, device) + ", bootstrap " + bootstrap_);
  watch_ = std::make_unique<CollectiveWatch>(*handle_, collective_timeout, abort_grace);
}

NcclCommunicator::~NcclCommunicator() {
  // The watch stops first; the handle then finalizes (or aborts) the communicator. The device memory, the
  // stream and events go last, once nothing of NCCL's can still use them, with the device current.
  watch_.reset();
  handle_.reset();
  try {
    cuda::DeviceGuard guard(device_);
    values_.reset();
    forks_.clear();
    joined_.reset();
    stream_.reset();
    pool_.reset();
  } catch (...) {
    // Nothing to report from a destructor.
  }
}

std::string NcclCommunicator::describe() const {
  return "NCCL " + nccl_version() + " (bootstrap: " + bootstrap_ + ")";
}

void NcclCommunicator::attach(nn::Context& context) {
  auto* gpu = dynamic_cast<nn::CudaContext*>(&context);
  if (gpu == nullptr || context.device() != device_)
    throw InvalidArgument(handle_->where() + ": the trainer must run on GPU " + std::to_string(device_));
  context_ = gpu;
  cuda::DeviceGuard guard(device_);
  // Made with the device current (streams and events belong to the device current when they are made),
  // once: a warm-up that failed and is tried again attaches a new context to the same communicator.
  if (!pool_) pool_.emplace(device_);
  if (!stream_) stream_.emplace(highest_stream_priority());
  if (!joined_) joined_.emplace();
  if (!values_) {
    values_ = pool_->allocate(kMaxValues * sizeof(double), stream_->get(), "data parallel: values averaged");
    stream_->synchronize();  // usable on the context's stream too from here on
  }
}

void NcclCommunicator::check_usable() const {
  if (const std::string failure = handle_->failure(); !failure.empty()) throw CollectiveError(failure);
  if (context_ == nullptr) throw InvalidArgument(handle_->where() + ": used before attach()");
}

bool NcclCommunicator::capturing() const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CONVEYOR_CUDA(cudaStreamIsCapturing(context_->stream(), &status), "data parallel (capture status)");
  return status != cudaStreamCaptureStatusNone;
}

void NcclCommunicator::fork() {
  check_usable();
  // Its own event per fork: a wait takes the event's state at the time of the call, and in a captured step
  // each fork is a separate edge of the graph.
  if (forks_used_ == forks_.size()) forks_.emplace_back();
  cuda::Event& event = forks_[forks_used_++];
  event.record(context_->stream());
  CONVEYOR_CUDA(cudaStreamWaitEvent(stream_->get(), event.get(), 0), "data parallel (ordering a collective)");
}

void NcclCommunicator::all_reduce_average(void* data, std::size_t count, nn::DType type,
                                          const std::string& what) {
  check_usable();
  const ncclDataType_t nccl = nccl_type(type);
  const cudaStream_t stream = stream_->get();
  handle_->run("ncclAllReduce", what, [&](ncclComm_t comm) {
    return ncclAllReduce(data, data, count, nccl, ncclAvg, comm, stream);
  });
}

void NcclCommunicator::broadcast(void* data, std::size_t count, nn::DType type, int root,
                                 const std::string& what) {
  check_usable();
  const ncclDataType_t nccl = nccl_type(type);
  const cudaStream_t stream = stream_->get();
  handle_->run("ncclBroadcast", what,
               [&](ncclComm_t comm) { return ncclBroadcast(data, data, count, nccl, root, comm, stream); });
}

void NcclCommunicator::join() {
  check_usable();
  joined_->record(stream_->get());
  CONVEYOR_CUDA(cudaStreamWaitEvent(context_->stream(), joined_->get(), 0),
                "data parallel (waiting for a collective)");
  forks_used_ = 0;
  // Outside a capture the watch follows these collectives from here; a captured step's are followed from
  // after_step(), once its replay is launched.
  if (!capturing()) watch_->mark(context_->stream(), "the collectives after step " + std::to_string(steps_));
}

void NcclCommunicator::after_step() {
  check_usable();
  ++steps_;
  watch_->mark(context_->stream(), "the end of step " + std::to_string(steps_));
}

void NcclCommunicator::average_on_host(std::span<double> values) {
  check_usable();
  if (values.size() > kMaxValues) throw InvalidArgument("data parallel: too many values to average at once");
  const cudaStream_t stream = context_->stream();
  CONVEYOR_CUDA(
      cudaMemcpyAsync(values_.data(), values.data(), values.size_bytes(), cudaMemcpyHostToDevice, stream),
      "data parallel (averaging values)");
  fork();
  const cudaStream_t comm_stream = stream_->get();
  void* device_values = values_.data();
  handle_->run("ncclAllReduce", "the average of the step's loss", [&](ncclComm_t comm) {
    return ncclAllReduce(device_values, device_values, values.size(), ncclFloat64, ncclAvg, comm,
                         comm_stream);
  });
  join();
  CONVEYOR_CUDA(
      cudaMemcpyAsync(values.data(), values_.data(), values.size_bytes(), cudaMemcpyDeviceToHost, stream),
      "data parallel (averaging values)");
  // Returns once the average arrived, or once the watch aborted the communicator (its kernels stop): then
  // the values are not averages, and the check says why.
  context_->synchronize();
  check_usable();
}

void NcclCommunicator::barrier() {
  // NCCL has no barrier: an all-reduce of one value that every rank must reach, waited for on the host.
  double token = 0;
  average_on_host(std::span<double>(&token, 1));
}

void NcclCommunicator::abandon() noexcept { handle_->abandon(); }

}  // namespace conveyor::train
