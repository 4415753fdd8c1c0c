// The registry of GPU twins (conveyor/cuda/gpu_twins.h) and the library's own twins: flip_horizontal and
// distort run in the feeder's fused kernel with normalize (their parameters set FeederOptions::augment), and
// decode_random_resized_crop stays in the chain, where it may leave images to the feeder's GPU decoder.
#include "conveyor/cuda/gpu_twins.h"

#include <any>
#include <utility>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"

namespace conveyor {

GpuTwin pixel_twin(
    std::function<std::unique_ptr<DevicePixelOp>(const SampleOp& op, std::uint64_t position, int device)>
        make) {
  GpuTwin twin;
  twin.place = [make = std::move(make)](const SampleOp& op, std::uint64_t position, FeederOptions& options) {
    // Taken from the chain's end: each one taken runs before those taken earlier.
    options.pixel_ops.insert(
        options.pixel_ops.begin(),
        PlacedPixelOp{op, position, [make, op, position](int device) { return make(op, position, device); }});
    return true;
  };
  return twin;
}

GpuTwins GpuTwins::library() {
  GpuTwins twins;
  twins.add("flip_horizontal",
            {.geometric = true,
             .fused = true,
             .place = [](const SampleOp& op, std::uint64_t position, FeederOptions& options) {
               const auto* spec = std::any_cast<ops::FlipHorizontalSpec>(&op.spec);
               if (spec == nullptr || !options.normalize || options.augment.flip_horizontal) return false;
               options.augment.flip_horizontal = spec->p;
               options.augment.flip_stream = op_stream(spec->stream, position);
               return true;
             }});
  twins.add("distort",
            {.fused = true, .place = [](const SampleOp& op, std::uint64_t position, FeederOptions& options) {
               const auto* spec = std::any_cast<ops::DistortSpec>(&op.spec);
               if (spec == nullptr || !options.normalize || options.augment.distort) return false;
               options.augment.distort = spec->options;
               options.augment.distort_stream = op_stream(spec->stream, position);
               return true;
             }});
  // Not moved: it stays the chain's last map, which the feeder's GPU decoder then shares the images with.
  twins.add("decode_random_resized_crop",
            {.defers = true, .place = [](const SampleOp&, std::uint64_t, FeederOptions&) { return false; }});
  return twins;
}

GpuTwins& GpuTwins::add(std::string name, GpuTwin twin) {
  twins_.insert_or_assign(std::move(name), std::move(twin));
  return *this;
}

const GpuTwin* GpuTwins::find(std::string_view name) const noexcept {
  if (name.empty()) return nullptr;
  const auto it = twins_.find(name);
  return it == twins_.end() ? nullptr : &it->second;
}

}  // namespace conveyor
