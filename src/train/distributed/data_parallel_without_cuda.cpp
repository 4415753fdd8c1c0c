// DataParallelTrainer in a build without CUDA: NCCL and GPUs are what it is made of, so it cannot be made.
// Its constructors say so; no object exists whose other members could be called.
#include "conveyor/error.h"
#include "conveyor/train/data_parallel.h"

namespace conveyor::train {
namespace {

[[noreturn]] void built_without_cuda() {
  throw InvalidArgument(
      "data parallel: conveyor was built without CUDA (data-parallel training needs GPUs and NCCL)");
}

}  // namespace

class DataParallelTrainer::Impl {};

DataParallelTrainer::DataParallelTrainer(TrainerOptions, Rendezvous&, DataParallelOptions) {
  built_without_cuda();
}
DataParallelTrainer::DataParallelTrainer(TrainerOptions, std::vector<int>, DataParallelOptions) {
  built_without_cuda();
}
DataParallelTrainer::~DataParallelTrainer() = default;
int DataParallelTrainer::world_size() const noexcept { return 1; }
int DataParallelTrainer::rank() const noexcept { return 0; }
std::size_t DataParallelTrainer::local_replicas() const noexcept { return 0; }
int DataParallelTrainer::device(std::size_t) const { built_without_cuda(); }
void DataParallelTrainer::warmup() { built_without_cuda(); }
double DataParallelTrainer::warmup_seconds() const noexcept { return 0; }
void DataParallelTrainer::step(const DeviceBatch&) { built_without_cuda(); }
void DataParallelTrainer::step(std::span<const DeviceBatch>) { built_without_cuda(); }
void DataParallelTrainer::set_learning_rate(double) { built_without_cuda(); }
StepStats DataParallelTrainer::last_step() { built_without_cuda(); }
void DataParallelTrainer::average_statistics() { built_without_cuda(); }
void DataParallelTrainer::synchronize() { built_without_cuda(); }
std::size_t DataParallelTrainer::steps() const noexcept { return 0; }
Trainer& DataParallelTrainer::replica(std::size_t) { built_without_cuda(); }
std::string DataParallelTrainer::placement() const { built_without_cuda(); }

}  // namespace conveyor::train
