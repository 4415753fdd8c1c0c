#include "src/device/cpu_feeder.h"

#include <cstring>
#include <string>
#include <utility>

#include "conveyor/error.h"
#include "conveyor/ops/deferred_crop.h"
#include "conveyor/ops/distort.h"
#include "conveyor/ops/flip.h"
#include "conveyor/ops/normalize.h"
#include "conveyor/random.h"
#include "src/device/normalized_images.h"

namespace conveyor::detail {

CpuFeeder::CpuFeeder(const FeederOptions& options)
    : options_(options), held_(static_cast<std::size_t>(options.depth)), slots_(held_.size()) {}

std::size_t CpuFeeder::decode_deferred(const Batch& batch) {
  const ImageShape shape = batch.sample_shape();
  // The batch was handed to the feeder: its buffer (pool memory, written by the pipeline) is ours to fill.
  auto* pixels = const_cast<std::uint8_t*>(batch.pixels().data());
  std::size_t decoded = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!batch.samples()[i].deferred) continue;
    const ImageView slot(pixels + i * shape.bytes(), shape);
    try {
      const std::optional<ops::DeferredCrop> crop = ops::read_deferred_crop(batch.deferred_descriptor(i));
      if (!crop) throw InvalidArgument("the descriptor was not left by decode_random_resized_crop");
      ops::decode_deferred_crop(batch.deferred_bytes(i), *crop, slot);
      ++decoded;
    } catch (const std::exception& error) {
      const SampleInfo& info = batch.samples()[i];
      throw PipelineError(
          "sample " + std::to_string(info.index) + " of epoch " + std::to_string(info.epoch) + " (deferred)",
          "device decode", error.what());
    }
  }
  return decoded;
}

void CpuFeeder::run_pixel_ops(const Batch& batch) const {
  const ImageShape shape = batch.sample_shape();
  // Like the deferred samples above: the batch was handed over, its pixels are ours to change, in place, as a
  // GPU feeder's twins change its copy of them.
  auto* pixels = const_cast<std::uint8_t*>(batch.pixels().data());
  Sample sample;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const ImageView image(pixels + i * shape.bytes(), shape);
    for (const PlacedPixelOp& placed : options_.pixel_ops) {
      sample.recycle();
      const SampleInfo& info = batch.samples()[i];
      sample.index = info.index;
      sample.epoch = info.epoch;
      sample.seed = info.seed;
      sample.op_position = static_cast<std::uint32_t>(placed.position);
      sample.bind_slot(image);
      sample.output(shape);  // the slot: the image is already there
      sample.publish();
      placed.op.apply(sample);
      if (sample.in_slot()) continue;
      const ConstImageView result = sample.image();
      if (result.shape() != shape)
        throw InvalidArgument("DeviceFeeder: the pixel op '" + placed.op.name +
                              "' changed the image's shape");
      for (int y = 0; y < shape.height; ++y)
        std::memcpy(image.row(y), result.row(y), static_cast<std::size_t>(shape.width) * shape.channels);
    }
  }
}

const std::uint8_t* CpuFeeder::augment(const Batch& batch, Slot& slot) const {
  const ImageShape shape = batch.sample_shape();
  if (batch.samples().size() != batch.size())
    throw InvalidArgument(
        "DeviceFeeder: FeederOptions::augment draws from each sample's seed, and this batch "
        "carries none (Batch::samples() is empty)");
  slot.augmented.assign(batch.pixels().begin(), batch.pixels().end());
  const DeviceAugment& augment = options_.augment;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const ImageView image(slot.augmented.data() + i * shape.bytes(), shape);
    const std::uint64_t seed = batch.samples()[i].seed;
    if (augment.flip_horizontal && ops::draw_flip(*augment.flip_horizontal, seed, augment.flip_stream))
      ops::flip_horizontal(image);
    if (augment.distort) {
      Rng rng(seed, augment.distort_stream);
      ops::distort(image, *augment.distort, rng);
    }
  }
  return slot.augmented.data();
}

DeviceBatch CpuFeeder::stage(Batch batch, StageMode mode) {
  const std::optional<std::size_t> taken = held_.take();
  if (!taken) throw_all_slots_held(held_.size());
  const std::size_t index = *taken;
  auto hold = std::make_shared<SlotHold>(shared_from_this(), index);  // from here on, release() undoes take()
  Slot& slot = slots_[index];
  const ImageShape shape = batch.sample_shape();
  if (!mode.augmented) DeviceBatchAccess::check_augment(options_, batch);
  const std::size_t decoded = batch.deferred_count() > 0 ? decode_deferred(batch) : 0;
  if (!mode.augmented && !options_.pixel_ops.empty()) {
    if (batch.samples().size() != batch.size())
      throw InvalidArgument(
          "DeviceFeeder: pixel ops draw from each sample's seed, and this batch carries none");
    run_pixel_ops(batch);
  }
  DeviceBatchAccess::Parts parts;
  parts.pixels = batch.pixel_tensor();
  parts.labels = batch.label_tensor();
  parts.fields = batch.fields();  // the batch stays in the slot while the handle lives
  parts.samples = batch.samples();
  parts.size = batch.size();
  parts.shape = shape;
  parts.sequence = batch.sequence();
  parts.epoch = batch.epoch();
  if (options_.normalize) {
    const ops::NormalizeParams& params = *options_.normalize;
    std::lock_guard lock(mutex_);  // release() of another slot may run on another thread meanwhile
    const bool augment_here = !options_.augment.empty() && !mode.augmented;
    const std::uint8_t* pixels = augment_here ? augment(batch, slot) : batch.pixels().data();
    slot.images.resize(batch.size() * shape.bytes() * ops::element_size(params.type));
    ops::normalize_batch(pixels, batch.size(), shape, params, slot.images.data());
    parts.images = normalized_images(slot.images.data(), batch.size(), shape, params, -1, false);
    parts.normalization = params;
    parts.augmented = !options_.augment.empty();
  }
  {
    std::lock_guard lock(mutex_);
    slot.batch = std::move(batch);
    ++batches_;
    cpu_decoded_ += decoded;
  }
  return DeviceBatchAccess::make(std::move(hold), parts);
}

FeederStats CpuFeeder::stats() const {
  FeederStats stats;
  std::lock_guard lock(mutex_);
  stats.batches = batches_;
  stats.held = held_.held();
  stats.decoder = "none: the placement is the CPU (the pipeline decodes every image)";
  stats.cpu_fallbacks = cpu_decoded_;
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
