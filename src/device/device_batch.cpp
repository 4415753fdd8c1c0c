// DeviceBatch's handle plumbing, shared by both feeder backends.
#include "conveyor/cuda/device_batch.h"

#include <string>

#include "conveyor/error.h"
#include "src/device/feeder_backend.h"
#include "src/device/normalized_images.h"

namespace conveyor {

std::shared_ptr<const void> DeviceBatch::share_hold() const noexcept { return hold_; }

const TensorView& DeviceBatch::field(std::string_view name) const noexcept {
  static const TensorView none;  // constant: what a batch without the tensor shows
  for (const BatchTensor& tensor : parts_.fields)
    if (tensor.name == name) return tensor.view;
  return none;
}

namespace detail {

DeviceBatch DeviceBatchAccess::make(std::shared_ptr<SlotHold> hold, const Parts& parts) {
  DeviceBatch batch;
  batch.hold_ = std::move(hold);
  batch.parts_ = parts;
  return batch;
}

void DeviceBatchAccess::check_augment(const FeederOptions& options, const Batch& batch) {
  if (!options.augment.flip_horizontal) return;
  for (const BatchTensor& tensor : batch.fields())
    if (tensor.follows_geometry)
      throw InvalidArgument(
          "DeviceFeeder: FeederOptions::augment flips images only, and this batch's '" +
          std::string(tensor.field) +
          "' field would have to flip with them: flip in the pipeline (ops::flip_horizontal), "
          "as place_pixel_ops does for chains whose samples have fields that move with the "
          "image");
}

void throw_all_slots_held(std::size_t depth) {
  throw Error("DeviceFeeder: all " + std::to_string(depth) +
              " ring slots are held by DeviceBatch handles (or views of them) still alive; release one "
              "(let it go out of scope, or call release()) before staging another, or make the feeder "
              "deeper (FeederOptions::depth). The feeder never overwrites a batch in use.");
}

DType dtype_of(ops::ElementType type) noexcept {
  switch (type) {
    case ops::ElementType::float32:
      return DType::float32;
    case ops::ElementType::float16:
      return DType::float16;
    case ops::ElementType::bfloat16:
      return DType::bfloat16;
  }
  return DType::float32;
}

TensorView normalized_images(void* data, std::size_t count, ImageShape shape,
                             const ops::NormalizeParams& params, int device, bool pinned) {
  const auto n = static_cast<std::int64_t>(count);
  if (params.layout == ops::TensorLayout::chw)
    return TensorView::contiguous(data, dtype_of(params.type), {n, shape.channels, shape.height, shape.width},
                                  device, pinned);
  return TensorView::contiguous(data, dtype_of(params.type), {n, shape.height, shape.width, shape.channels},
                                device, pinned);
}

}  // namespace detail
}  // namespace conveyor
