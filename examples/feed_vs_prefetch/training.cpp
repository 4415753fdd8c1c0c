#include "training.h"

#include <chrono>

namespace feed_vs_prefetch {

namespace {

conveyor::train::TrainerOptions prefetch_trainer(const Setup& setup) {
  conveyor::train::TrainerOptions options = setup.trainer;
  options.cuda_graph = setup.prefetch_graph;
  return options;
}

}  // namespace

Training::Training(const Setup& setup) {
  const conveyor::train::TrainerOptions options = prefetch_trainer(setup);
  if (setup.data_parallel())
    parallel_ = std::make_unique<conveyor::train::DataParallelTrainer>(
        options, setup.ranks,
        conveyor::train::DataParallelOptions{
            .collective_timeout =
                std::chrono::milliseconds(static_cast<long long>(setup.options.collective_timeout * 1000))});
  else
    single_ = std::make_unique<conveyor::train::Trainer>(options);
}

void Training::warmup() {
  if (single_)
    single_->warmup();
  else
    parallel_->warmup();
}

void Training::step(const conveyor::DeviceBatch& batch) {
  if (single_)
    single_->step(batch);
  else
    parallel_->step(batch);
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

conveyor::train::Trainer& Training::trainer() { return single_ ? *single_ : parallel_->trainer(); }

std::string Training::placement() const { return single_ ? single_->placement() : parallel_->placement(); }

}  // namespace feed_vs_prefetch
