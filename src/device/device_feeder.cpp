#include "conveyor/cuda/device_feeder.h"

#include <algorithm>
#include <string>
#include <utility>

#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/error.h"
#include "src/device/cpu_feeder.h"
#ifdef CONVEYOR_HAVE_CUDA
#include "src/device/gpu_feeder.h"
#endif

namespace conveyor {
namespace {

void check_options(const FeederOptions& options) {
  if (options.depth < 1 || options.depth > 8)
    throw InvalidArgument("DeviceFeeder depth must be 1 to 8 (2 or 3 are the useful ones), got " +
                          std::to_string(options.depth));
}

void check_batch(const Batch& batch) {
  if (!batch) throw InvalidArgument("DeviceFeeder::stage: the batch is empty (moved from or released)");
  if (batch.size() == 0 || batch.sample_shape().empty())
    throw InvalidArgument("DeviceFeeder::stage: the batch has no samples");
}

}  // namespace

DeviceFeeder::DeviceFeeder(const Placement& placement, FeederOptions options)
    : placement_(placement), options_(std::move(options)) {
  check_options(options_);
  if (!placement_.gpu) {
    backend_ = std::make_shared<detail::CpuFeeder>(options_);
    return;
  }
#ifdef CONVEYOR_HAVE_CUDA
  backend_ = std::make_shared<detail::GpuFeeder>(placement_.device, options_, nullptr);
#else
  throw DeviceError("DeviceFeeder: placement on gpu:" + std::to_string(placement_.device) +
                    " but this build of conveyor has no CUDA support");
#endif
}

DeviceFeeder::DeviceFeeder(const Placement& placement, [[maybe_unused]] cuda::DeviceMemoryPool& pool,
                           FeederOptions options)
    : placement_(placement), options_(std::move(options)) {
  check_options(options_);
  if (!placement_.gpu)
    throw InvalidArgument("DeviceFeeder: a device memory pool was given for a CPU placement");
#ifdef CONVEYOR_HAVE_CUDA
  backend_ = std::make_shared<detail::GpuFeeder>(placement_.device, options_, &pool);
#else
  throw DeviceError("DeviceFeeder: this build of conveyor has no CUDA support");
#endif
}

DeviceFeeder::~DeviceFeeder() {
  // Held batches keep the backend (and their ring memory) alive; the copies in flight end here.
  try {
    backend_->synchronize();
  } catch (const Error&) {
    // A destructor cannot report; a failed copy was reported (or will be) by stage() or synchronize().
  }
}

DeviceBatch DeviceFeeder::stage(Batch batch) {
  check_batch(batch);
  return backend_->stage(std::move(batch));
}

BatchedDataset DeviceFeeder::fed(const BatchedDataset& dataset) const {
  // The feeder holds up to `depth` host batches while their copies run; the pipeline keeps room for them.
  return dataset.with_options(
      {.held_batches = std::max(dataset.options().held_batches, static_cast<std::size_t>(options_.depth)),
       .host_memory = host_memory_for(placement_)});
}

DeviceBatchIterator DeviceFeeder::feed(const BatchedDataset& dataset) {
  return DeviceBatchIterator(*this, fed(dataset).begin());
}

DeviceBatchIterator DeviceFeeder::feed(const BatchedDataset& dataset, const IteratorState& state) {
  return DeviceBatchIterator(*this, fed(dataset).begin(state));
}

void DeviceFeeder::synchronize() { backend_->synchronize(); }

FeederStats DeviceFeeder::stats() const { return backend_->stats(); }

const Placement& DeviceFeeder::placement() const noexcept { return placement_; }

const FeederOptions& DeviceFeeder::options() const noexcept { return options_; }

// ---- DeviceBatchIterator -----------------------------------------------------------------------

std::optional<DeviceBatch> DeviceBatchIterator::next() {
  if (fetched_) {
    fetched_ = false;
    return std::exchange(current_, std::nullopt);
  }
  std::optional<Batch> batch = batches_.next();
  if (!batch) return std::nullopt;
  return feeder_->stage(std::move(*batch));
}

bool DeviceBatchIterator::at_end() {
  if (!fetched_) {
    current_.reset();  // the previous item is released before the next is staged
    current_ = next();
    fetched_ = true;
  }
  return !current_.has_value();
}

DeviceBatch& DeviceBatchIterator::current() {
  if (at_end()) throw InvalidArgument("DeviceBatchIterator: dereferenced at the end");
  return *current_;
}

void DeviceBatchIterator::advance() {
  if (!fetched_) at_end();  // skip the item that was never looked at
  fetched_ = false;
  current_.reset();
}

}  // namespace conveyor
