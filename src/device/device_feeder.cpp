#include "conveyor/device_feeder.h"

#include <string>
#include <vector>

#include "conveyor/error.h"
#include "src/device/gpu_stager.h"

namespace conveyor {

struct DeviceFeeder::Impl {
  Placement placement;
  int depth;
  // CPU placement: the ring holds the batches themselves, so their memory outlives the steps reading it.
  std::vector<Batch> held;
  std::uint64_t next = 0;
  FeederStats cpu_stats;
#ifdef CONVEYOR_HAVE_CUDA
  std::unique_ptr<detail::GpuStager> gpu;
#endif
};

namespace {

void check_depth(int depth) {
  if (depth < 1 || depth > 8)
    throw InvalidArgument("DeviceFeeder depth must be 1 to 8 (2 or 3 are the useful ones), got " +
                          std::to_string(depth));
}

void check_batch(const Batch& batch) {
  if (!batch) throw InvalidArgument("DeviceFeeder::stage: the batch is empty (moved from or released)");
  if (batch.size() == 0 || batch.sample_shape().empty())
    throw InvalidArgument("DeviceFeeder::stage: the batch has no samples");
}

}  // namespace

DeviceFeeder::DeviceFeeder(const Placement& placement, int depth) : impl_(std::make_unique<Impl>()) {
  check_depth(depth);
  impl_->placement = placement;
  impl_->depth = depth;
  if (placement.gpu) {
#ifdef CONVEYOR_HAVE_CUDA
    impl_->gpu = std::make_unique<detail::GpuStager>(placement.device, depth, nullptr);
#else
    throw DeviceError("DeviceFeeder: placement on gpu:" + std::to_string(placement.device) +
                      " but this build of conveyor has no CUDA support");
#endif
  } else {
    impl_->held.resize(static_cast<std::size_t>(depth));
  }
}

DeviceFeeder::DeviceFeeder(const Placement& placement, [[maybe_unused]] cuda::DeviceMemoryPool& pool,
                           int depth)
    : impl_(std::make_unique<Impl>()) {
  check_depth(depth);
  impl_->placement = placement;
  impl_->depth = depth;
  if (!placement.gpu)
    throw InvalidArgument("DeviceFeeder: a device memory pool was given for a CPU placement");
#ifdef CONVEYOR_HAVE_CUDA
  impl_->gpu = std::make_unique<detail::GpuStager>(placement.device, depth, &pool);
#else
  throw DeviceError("DeviceFeeder: this build of conveyor has no CUDA support");
#endif
}

DeviceFeeder::~DeviceFeeder() = default;

StagedBatch DeviceFeeder::stage(Batch batch) {
  check_batch(batch);
#ifdef CONVEYOR_HAVE_CUDA
  if (impl_->gpu) return impl_->gpu->stage(std::move(batch));
#endif
  StagedBatch staged;
  staged.pixels = batch.pixels().data();
  staged.labels = batch.labels().data();
  staged.size = batch.size();
  staged.shape = batch.sample_shape();
  // Replacing the slot's batch gives back the one staged `depth` calls ago.
  impl_->held[impl_->next % impl_->held.size()] = std::move(batch);
  ++impl_->next;
  ++impl_->cpu_stats.batches;
  return staged;
}

void DeviceFeeder::synchronize() {
#ifdef CONVEYOR_HAVE_CUDA
  if (impl_->gpu) impl_->gpu->synchronize();
#endif
}

FeederStats DeviceFeeder::stats() const {
#ifdef CONVEYOR_HAVE_CUDA
  if (impl_->gpu) return impl_->gpu->stats();
#endif
  return impl_->cpu_stats;
}

const Placement& DeviceFeeder::placement() const noexcept { return impl_->placement; }

int DeviceFeeder::depth() const noexcept { return impl_->depth; }

}  // namespace conveyor
