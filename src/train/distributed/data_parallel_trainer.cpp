// DataParallelTrainer: one Trainer, its communicator (chosen with the backend: src/train/backend.h) and the
// gradient reducer that joins them. The same code for the CPU and GPUs; nothing here asks which.
#include <chrono>
#include <exception>
#include <string>

#include "conveyor/error.h"
#include "conveyor/progress_watch.h"
#include "conveyor/train/data_parallel.h"
#include "src/device/hardware_queues.h"
#include "src/train/backend.h"
#include "src/train/distributed/gradient_reducer.h"
#include "src/train/trainer_impl.h"

namespace conveyor::train {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

class DataParallelTrainer::Impl {
 public:
  Impl(const TrainerOptions& options, const Ranks& ranks, const DataParallelOptions& parallel);

  // Runs `work`; an exception from it may leave a collective half-done on this rank, so the communicator
  // is abandoned (it ends without waiting for the other ranks) and the trainer refuses further work.
  template <class Work>
  auto guarded(Work&& work) {
    check_usable();
    try {
      return work();
    } catch (...) {
      failed = true;
      comm->abandon();
      throw;
    }
  }
  void check_usable() const {
    if (failed)
      throw CollectiveError(
          "data parallel: an earlier call failed part-way through a collective; make a "
          "new trainer");
  }
  void check_batch(const DeviceBatch& batch) const;

  const DataParallelOptions parallel;
  const Ranks ranks;
  const int device;
  // Taken down in reverse: the reducer (it uses the trainer's context), the trainer (its captured step
  // graphs hold the communicator's collectives), then the communicator, which on a GPU waits until no graph
  // refers to it any more (the other way round, every rank hung at exit on two H200s).
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<GradientReducer> reducer;  // made at warm-up, for the context it makes
  bool warmed_up = false;
  bool failed = false;
  double warmup_seconds = 0;
};

DataParallelTrainer::Impl::Impl(const TrainerOptions& options, const Ranks& ranks,
                                const DataParallelOptions& parallel)
    : parallel(parallel), ranks(ranks), device(options.device) {
  if (parallel.bucket_bytes == 0) throw InvalidArgument("data parallel: bucket_bytes must be positive");
  trainer = std::make_unique<Trainer>(options);  // checks the options before the ranks meet
  comm = make_communicator(
      ranks, options.device,
      {.connect_timeout = parallel.connect_timeout,
       .collective_timeout = parallel.collective_timeout,
       .abort_grace = parallel.abort_grace});
  Trainer::Impl& t = *trainer->impl_;
  // The reducer needs the trainer's context and bound parameters, which warm-up makes; its hooks must be
  // in place before warm-up's throwaway step and the capture of the step's graph.
  t.hooks.prepared = [this, &t] {
    reducer = std::make_unique<GradientReducer>(*t.ctx, t.params, *comm, this->parallel.bucket_bytes);
    reducer->attach(t.hooks);
  };
}

void DataParallelTrainer::Impl::check_batch(const DeviceBatch& batch) const {
  // The checks Trainer::step makes, made before the step begins: a batch refused after the first
  // all-reduce began would leave the other ranks waiting in it.
  const TrainerOptions& o = trainer->options();
  const std::string where = "data parallel: rank " + std::to_string(ranks.rank) + "'s batch";
  if (!batch) throw InvalidArgument(where + " is empty (released or moved from)");
  if (batch.size() != static_cast<std::size_t>(o.batch))
    throw InvalidArgument(where + " has " + std::to_string(batch.size()) + " images; every step takes " +
                          std::to_string(o.batch));
  if (batch.sample_shape() != o.input) throw InvalidArgument(where + " holds images of another shape");
  if (batch.on_device() && batch.device() != o.device)
    throw InvalidArgument(where + " is on GPU " + std::to_string(batch.device()) + ", the trainer on " +
                          std::to_string(o.device));
}

// ---- the public class ----------------------------------------------------------------------------

DataParallelTrainer::DataParallelTrainer(TrainerOptions options, const Ranks& ranks,
                                         DataParallelOptions parallel)
    : impl_(std::make_unique<Impl>(options, ranks, parallel)) {}

DataParallelTrainer::~DataParallelTrainer() {
  // Destroyed while an exception unwinds (a failed pipeline, a refused batch): the other ranks may never
  // reach their matching collectives, so the communicator ends without waiting for them, and the error
  // reaches the user instead of a hang.
  if (impl_ && (std::uncaught_exceptions() > 0 || impl_->failed)) impl_->comm->abandon();
}

int DataParallelTrainer::world_size() const noexcept { return impl_->ranks.world_size; }
int DataParallelTrainer::rank() const noexcept { return impl_->ranks.rank; }

void DataParallelTrainer::warmup() {
  if (impl_->warmed_up) return;
  const auto start = Clock::now();
  impl_->guarded([this] {
    const ProgressWatch::Doing doing("warm-up (context, algorithms, first collectives)");
    try {
      impl_->trainer->warmup();
    } catch (...) {
      impl_->reducer.reset();  // made for a context the failed warm-up has dropped
      throw;
    }
    DeviceScope scope(impl_->device);
    impl_->reducer->broadcast_state();
    impl_->trainer->synchronize();
    impl_->comm->check();
  });
  impl_->warmed_up = true;
  impl_->warmup_seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

double DataParallelTrainer::warmup_seconds() const noexcept { return impl_->warmup_seconds; }

void DataParallelTrainer::step(const DeviceBatch& batch) {
  impl_->check_usable();
  impl_->check_batch(batch);
  warmup();
  impl_->guarded([&] {
    const ProgressWatch::Doing doing("step", static_cast<long long>(impl_->trainer->steps()));
    impl_->trainer->step(batch);
    DeviceScope scope(impl_->device);
    impl_->comm->after_step();
  });
}

void DataParallelTrainer::set_learning_rate(double learning_rate) {
  impl_->check_usable();
  impl_->trainer->set_learning_rate(learning_rate);
}

StepStats DataParallelTrainer::last_step() {
  return impl_->guarded([this]() -> StepStats {
    const ProgressWatch::Doing doing("reading the last step's loss (waits for the step)");
    const StepStats local = impl_->trainer->last_step();
    if (local.images == 0) return {};  // no step yet, on any rank
    double values[2] = {local.loss, local.accuracy};
    DeviceScope scope(impl_->device);
    impl_->comm->average_on_host(values);
    return {values[0], values[1], local.images * static_cast<std::size_t>(impl_->ranks.world_size)};
  });
}

void DataParallelTrainer::average_statistics() {
  warmup();
  impl_->guarded([this] {
    DeviceScope scope(impl_->device);
    impl_->reducer->average_statistics();
    impl_->trainer->synchronize();
    impl_->comm->check();
  });
}

void DataParallelTrainer::barrier() {
  impl_->guarded([this] {
    const ProgressWatch::Doing doing("a barrier of every rank");
    DeviceScope scope(impl_->device);
    impl_->comm->barrier();
  });
}

void DataParallelTrainer::synchronize() {
  impl_->guarded([this] {
    impl_->trainer->synchronize();
    impl_->comm->check();
  });
}

std::size_t DataParallelTrainer::steps() const noexcept { return impl_->trainer->steps(); }

Trainer& DataParallelTrainer::trainer() { return *impl_->trainer; }

std::string DataParallelTrainer::placement() const {
  std::string text = "data parallel over " + impl_->comm->describe() + ": rank " +
                     std::to_string(impl_->ranks.rank) + " of " + std::to_string(impl_->ranks.world_size);
  if (const GradientReducer* reducer = impl_->reducer.get()) {
    const auto& buckets = reducer->buckets().buckets();
    text += ", " + std::to_string(buckets.size()) + " gradient buckets of at most " +
            std::to_string(impl_->parallel.bucket_bytes >> 10) + " KiB";
  }
  if (impl_->device >= 0) text += "; " + cuda::describe_hardware_queues();
  return text + "; " + impl_->trainer->placement();
}

}  // namespace conveyor::train
