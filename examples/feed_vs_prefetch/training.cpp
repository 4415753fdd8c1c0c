#include "training.h"

#include <vector>

namespace feed_vs_prefetch {

namespace {

conveyor::train::TrainerOptions prefetch_trainer(const Setup& setup) {
  conveyor::train::TrainerOptions options = setup.trainer;
  options.cuda_graph = setup.prefetch_graph;
  return options;
}

}  // namespace

Training::Training(const Setup& setup, std::shared_ptr<conveyor::ProgressWatch> watch) {
  const conveyor::train::TrainerOptions options = prefetch_trainer(setup);
  const conveyor::train::DataParallelOptions parallel{.progress_watch = std::move(watch)};
  if (!setup.data_parallel()) {
    single_ = std::make_unique<conveyor::train::Trainer>(options);
    return;
  }
  if (setup.ranks.world_size > 1) {
    // One process per GPU: rank 0 shares NCCL's id through MASTER_ADDR:MASTER_PORT.
    rendezvous_ = conveyor::train::connect_rendezvous(setup.ranks);
    parallel_ = std::make_unique<conveyor::train::DataParallelTrainer>(options, *rendezvous_, parallel);
    return;
  }
  std::vector<int> devices;
  for (const conveyor::Placement& placement : setup.placements) devices.push_back(placement.device);
  parallel_ = std::make_unique<conveyor::train::DataParallelTrainer>(options, devices, parallel);
}

void Training::warmup() {
  if (single_)
    single_->warmup();
  else
    parallel_->warmup();
}

void Training::step(std::span<const conveyor::DeviceBatch> batches) {
  if (single_)
    single_->step(batches[0]);
  else
    parallel_->step(batches);
}

conveyor::train::StepStats Training::last_step() {
  return single_ ? single_->last_step() : parallel_->last_step();
}

void Training::synchronize() {
  if (single_)
    single_->synchronize();
  else
    parallel_->synchronize();
}

std::size_t Training::replicas() const noexcept { return single_ ? 1 : parallel_->local_replicas(); }

conveyor::train::Trainer& Training::replica(std::size_t i) {
  return single_ ? *single_ : parallel_->replica(i);
}

std::string Training::placement() const { return single_ ? single_->placement() : parallel_->placement(); }

}  // namespace feed_vs_prefetch
