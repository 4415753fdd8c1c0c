#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <string>

#include "conveyor/error.h"
#include "conveyor/train/data_parallel.h"
#include "src/device/cuda_check.h"
#include "src/device/cuda_handles.h"
#include "src/train/distributed/gradient_reducer.h"
#include "src/train/distributed/nccl_communicator.h"
#include "src/train/distributed/replica_threads.h"
#include "src/train/trainer_impl.h"

namespace conveyor::train {
namespace {

using Clock = std::chrono::steady_clock;

void check_device(int device, const std::string& who) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || device < 0 || device >= count)
    throw InvalidArgument("data parallel: " + who + " GPU " + std::to_string(device) + ", " +
                          (status == cudaSuccess
                               ? std::to_string(count) + " visible"
                               : std::string("none usable: ") + cudaGetErrorString(status)));
}

}  // namespace

class DataParallelTrainer::Impl {
 public:
  // Taken down in the order ~Impl spells out: the reducer (it uses the trainer's context), the trainer
  // (its captured step graphs hold references to the communicator), then the communicator, whose
  // ncclCommDestroy waits until no graph refers to it any more.
  struct Replica {
    std::unique_ptr<Trainer> trainer;
    std::optional<NcclCommunicator> comm;
    std::unique_ptr<GradientReducer> reducer;  // made at warm-up
  };

  Impl(int rank, int world_size, DataParallelOptions parallel)
      : rank(rank), world_size(world_size), parallel(parallel) {}
  ~Impl();

  // A replica training with `options` on options.device, all-reducing through `comm`.
  void add_replica(const TrainerOptions& options, NcclCommunicator comm);
  // Runs job(i, replica i) for every local replica, at once on their threads when there are several.
  // Any failure leaves the replicas' collectives in an unknown state: the trainer refuses further work and
  // its communicators are aborted rather than finalized.
  void each(const std::function<void(std::size_t, Replica&)>& job);
  void check_usable() const;
  void check_batch(const DeviceBatch& batch, const Replica& replica) const;

  const int rank, world_size;
  const DataParallelOptions parallel;
  std::vector<std::unique_ptr<Replica>> replicas;
  std::unique_ptr<ReplicaThreads> threads;  // with more than one local replica
  bool warmed_up = false;
  bool failed = false;
  double warmup_seconds = 0;
};

void DataParallelTrainer::Impl::add_replica(const TrainerOptions& options, NcclCommunicator comm) {
  auto replica = std::make_unique<Replica>();
  replica->trainer = std::make_unique<Trainer>(options);
  replica->comm.emplace(std::move(comm));
  Replica* r = replica.get();
  Trainer::Impl& t = *r->trainer->impl_;
  // The reducer needs the replica's context and bound parameters, which warm-up makes; its hooks must be in
  // place before warm-up's throwaway step and the capture of the step's graph.
  t.hooks.prepared = [this, r, &t] {
    auto* gpu = dynamic_cast<nn::CudaContext*>(t.ctx.get());
    if (gpu == nullptr) throw InvalidArgument("data parallel: the replicas must train on GPUs");
    r->reducer = std::make_unique<GradientReducer>(*gpu, t.params, *r->comm, parallel.bucket_bytes);
    r->reducer->attach(t.hooks);
  };
  replicas.push_back(std::move(replica));
}

void DataParallelTrainer::Impl::check_usable() const {
  if (failed)
    throw Error("data parallel: an earlier call failed part-way through a collective; make a new trainer");
}

void DataParallelTrainer::Impl::each(const std::function<void(std::size_t, Replica&)>& job) {
  check_usable();
  try {
    if (!threads) {
      job(0, *replicas[0]);
      return;
    }
    threads->run([&](std::size_t i) { job(i, *replicas[i]); });
  } catch (...) {
    failed = true;
    for (auto& replica : replicas)
      if (replica->comm) replica->comm->mark_failed();
    throw;
  }
}

void DataParallelTrainer::Impl::check_batch(const DeviceBatch& batch, const Replica& replica) const {
  // The checks Trainer::step makes, made before any replica starts: a batch refused by one replica after
  // another has begun its all-reduces would leave that one waiting.
  const TrainerOptions& o = replica.trainer->options();
  const std::string where = "data parallel: the batch of the replica on GPU " + std::to_string(o.device);
  if (!batch) throw InvalidArgument(where + " is empty (released or moved from)");
  if (batch.size() != static_cast<std::size_t>(o.batch))
    throw InvalidArgument(where + " has " + std::to_string(batch.size()) + " images; every step takes " +
                          std::to_string(o.batch));
  if (batch.sample_shape() != o.input) throw InvalidArgument(where + " holds images of another shape");
  if (batch.on_device() && batch.device() != o.device)
    throw InvalidArgument(where + " is on GPU " + std::to_string(batch.device()));
}

DataParallelTrainer::Impl::~Impl() {
  // Each replica's own thread takes its communicator down: finalizing one waits for the others.
  auto teardown = [this](std::size_t i) {
    Replica& r = *replicas[i];
    if (failed && r.comm) r.comm->mark_failed();
    if (!failed) {
      try {
        r.trainer->synchronize();
      } catch (...) {
        if (r.comm) r.comm->mark_failed();
      }
    }
    std::optional<cuda::DeviceGuard> guard;
    try {
      guard.emplace(r.trainer->options().device);
    } catch (...) {
    }
    r.reducer.reset();
    // With the communicator first, ncclCommDestroy would wait forever for the step graphs that captured
    // its all-reduces (seen on two H200s: every rank hung at exit).
    r.trainer.reset();
    r.comm.reset();
  };
  try {
    if (threads)
      threads->run(teardown);
    else if (!replicas.empty())
      teardown(0);
  } catch (...) {
    // Nothing to report from a destructor; what could be freed was freed.
  }
}

// ---- the public class ----------------------------------------------------------------------------

DataParallelTrainer::DataParallelTrainer(TrainerOptions options, Rendezvous& rendezvous,
                                         DataParallelOptions parallel) {
  const Ranks& ranks = rendezvous.ranks();
  if (options.device < 0) options.device = ranks.local_rank;
  check_device(options.device, "rank " + std::to_string(ranks.rank) + " asks for");
  NcclId id{};
  if (ranks.is_main()) id = make_nccl_id();
  const std::vector<std::uint8_t> shared = rendezvous.broadcast(
      ranks.is_main() ? std::span<const std::uint8_t>(id) : std::span<const std::uint8_t>());
  if (shared.size() != id.size())
    throw RendezvousError("data parallel: rank 0 sent " + std::to_string(shared.size()) +
                          " bytes, not an NCCL id of " + std::to_string(id.size()));
  std::memcpy(id.data(), shared.data(), id.size());
  impl_ = std::make_unique<Impl>(ranks.rank, ranks.world_size, parallel);
  impl_->add_replica(options, NcclCommunicator(id, ranks.world_size, ranks.rank, options.device));
}

DataParallelTrainer::DataParallelTrainer(TrainerOptions options, std::vector<int> devices,
                                         DataParallelOptions parallel) {
  for (const int device : devices) check_device(device, "asked for");
  std::vector<NcclCommunicator> comms = NcclCommunicator::for_devices(devices);
  impl_ = std::make_unique<Impl>(0, static_cast<int>(devices.size()), parallel);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    options.device = devices[i];
    impl_->add_replica(options, std::move(comms[i]));
  }
  if (devices.size() > 1) {
    std::vector<std::string> names;
    for (const int device : devices) names.push_back("replica on gpu:" + std::to_string(device));
    impl_->threads =
        std::make_unique<ReplicaThreads>(devices.size(), parallel.progress_watch, std::move(names));
  }
}

DataParallelTrainer::~DataParallelTrainer() {
  // Destroyed while an exception unwinds (a failed pipeline, a refused batch): the other ranks may never
  // reach their matching collectives, so the communicators are aborted rather than finalized, and the
  // error reaches the user instead of a hang in ncclCommDestroy.
  if (impl_ && std::uncaught_exceptions() > 0) impl_->failed = true;
}

int DataParallelTrainer::world_size() const noexcept { return impl_->world_size; }
int DataParallelTrainer::rank() const noexcept { return impl_->rank; }
std::size_t DataParallelTrainer::local_replicas() const noexcept { return impl_->replicas.size(); }

int DataParallelTrainer::device(std::size_t replica) const {
  if (replica >= impl_->replicas.size())
    throw InvalidArgument("data parallel: no local replica " + std::to_string(replica));
  return impl_->replicas[replica]->trainer->options().device;
}

void DataParallelTrainer::warmup() {
  if (impl_->warmed_up) return;
  const auto start = Clock::now();
  impl_->each([](std::size_t, Impl::Replica& r) {
    const ProgressWatch::Doing doing("warm-up (contexts, algorithms, first collectives)");
    try {
      r.trainer->warmup();
    } catch (...) {
      r.reducer.reset();  // made for a context the failed warm-up has dropped
      throw;
    }
    cuda::DeviceGuard guard(r.trainer->options().device);
    r.reducer->broadcast_state();
    r.trainer->synchronize();
  });
  impl_->warmed_up = true;
  impl_->warmup_seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

double DataParallelTrainer::warmup_seconds() const noexcept { return impl_->warmup_seconds; }

void DataParallelTrainer::step(const DeviceBatch& batch) {
  if (impl_->replicas.size() != 1)
    throw InvalidArgument("data parallel: this process drives " + std::to_string(impl_->replicas.size()) +
                          " replicas; step() takes one batch for each");
  step(std::span<const DeviceBatch>(&batch, 1));
}

void DataParallelTrainer::step(std::span<const DeviceBatch> batches) {
  if (batches.size() != impl_->replicas.size())
    throw InvalidArgument("data parallel: " + std::to_string(batches.size()) + " batches for " +
                          std::to_string(impl_->replicas.size()) + " local replicas");
  impl_->check_usable();
  for (std::size_t i = 0; i < batches.size(); ++i) impl_->check_batch(batches[i], *impl_->replicas[i]);
  warmup();
  impl_->each([&](std::size_t i, Impl::Replica& r) {
    const ProgressWatch::Doing doing("step", static_cast<long long>(r.trainer->steps()));
    r.trainer->step(batches[i]);
  });
}

void DataParallelTrainer::set_learning_rate(double learning_rate) {
  impl_->check_usable();
  for (auto& r : impl_->replicas) r->trainer->set_learning_rate(learning_rate);
}

StepStats DataParallelTrainer::last_step() {
  std::vector<StepStats> local(impl_->replicas.size());
  impl_->each([&](std::size_t i, Impl::Replica& r) {
    const ProgressWatch::Doing doing("reading the last step's loss (waits for the step)");
    local[i] = r.trainer->last_step();
  });
  if (local[0].images == 0) return {};  // no step yet
  double values[2] = {0, 0};
  for (const StepStats& s : local) values[0] += s.loss, values[1] += s.accuracy;
  for (double& v : values) v /= static_cast<double>(local.size());
  // Replicas in other processes: their figures come through NCCL (every rank makes this call).
  if (impl_->world_size > static_cast<int>(local.size()))
    impl_->each([&](std::size_t, Impl::Replica& r) {
      cuda::DeviceGuard guard(r.trainer->options().device);
      r.reducer->average(values);
    });
  return {values[0], values[1], local[0].images * static_cast<std::size_t>(impl_->world_size)};
}

void DataParallelTrainer::average_statistics() {
  warmup();
  impl_->each([](std::size_t, Impl::Replica& r) {
    cuda::DeviceGuard guard(r.trainer->options().device);
    r.reducer->average_statistics();
    r.trainer->synchronize();
  });
}

void DataParallelTrainer::synchronize() {
  for (auto& r : impl_->replicas) r->trainer->synchronize();
}

std::size_t DataParallelTrainer::steps() const noexcept { return impl_->replicas[0]->trainer->steps(); }

Trainer& DataParallelTrainer::replica(std::size_t i) {
  if (i >= impl_->replicas.size())
    throw InvalidArgument("data parallel: no local replica " + std::to_string(i));
  return *impl_->replicas[i]->trainer;
}

std::string DataParallelTrainer::placement() const {
  std::string devices;
  for (const auto& r : impl_->replicas) {
    if (!devices.empty()) devices += ',';
    devices += std::to_string(r->trainer->options().device);
  }
  std::string text = "data parallel over NCCL " + nccl_version() + ": rank " + std::to_string(impl_->rank) +
                     " of " + std::to_string(impl_->world_size) + ", GPU " + devices + " in this process";
  const GradientReducer* reducer = impl_->replicas[0]->reducer.get();
  if (reducer != nullptr) {
    const auto& buckets = reducer->buckets().buckets();
    text += ", " + std::to_string(buckets.size()) + " gradient buckets of at most " +
            std::to_string(impl_->parallel.bucket_bytes >> 10) + " KiB";
  }
  return text + "; replica: " + impl_->replicas[0]->trainer->placement();
}

}  // namespace conveyor::train
