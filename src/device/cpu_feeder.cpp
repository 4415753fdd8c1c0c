#include "src/device/cpu_feeder.h"

#include <utility>

#include "conveyor/ops/normalize.h"
#include "src/device/normalized_images.h"

namespace conveyor::detail {

CpuFeeder::CpuFeeder(const FeederOptions& options)
    : options_(options), held_(static_cast<std::size_t>(options.depth)), slots_(held_.size()) {}

DeviceBatch CpuFeeder::stage(Batch batch) {
  const std::optional<std::size_t> taken = held_.take();
  if (!taken) throw_all_slots_held(held_.size());
  const std::size_t index = *taken;
  auto hold = std::make_shared<SlotHold>(shared_from_this(), index);  // from here on, release() undoes take()
  Slot& slot = slots_[index];
  const ImageShape shape = batch.sample_shape();
  DeviceBatchAccess::Parts parts;
  parts.pixels = batch.pixel_tensor();
  parts.labels = batch.label_tensor();
  parts.samples = batch.samples();
  parts.size = batch.size();
  parts.shape = shape;
  parts.sequence = batch.sequence();
  parts.epoch = batch.epoch();
  if (options_.normalize) {
    const ops::NormalizeParams& params = *options_.normalize;
    std::lock_guard lock(mutex_);  // release() of another slot may run on another thread meanwhile
    slot.images.resize(batch.size() * shape.bytes() * ops::element_size(params.type));
    ops::normalize_batch(batch.pixels().data(), batch.size(), shape, params, slot.images.data());
    parts.images = normalized_images(slot.images.data(), batch.size(), shape, params, -1, false);
  }
  {
    std::lock_guard lock(mutex_);
    slot.batch = std::move(batch);
    ++batches_;
  }
  return DeviceBatchAccess::make(std::move(hold), parts);
}

FeederStats CpuFeeder::stats() const {
  FeederStats stats;
  std::lock_guard lock(mutex_);
  stats.batches = batches_;
  stats.held = held_.held();
  return stats;
}

void CpuFeeder::release(std::size_t index) noexcept {
  Batch batch;
  {
    std::lock_guard lock(mutex_);
    batch = std::move(slots_[index].batch);
  }
  held_.give_back(index);
  // `batch` goes back to its pool here, outside the lock.
}

}  // namespace conveyor::detail
