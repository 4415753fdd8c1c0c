// A batch where its consumer reads it, handed over by a DeviceFeeder (conveyor/cuda/device_feeder.h):
// device memory when the feeder's placement is a GPU, host memory on the CPU.
//
// The handle is the consumer's claim on the memory. While it (or a view made from it, such as a DLPack
// tensor) lives, the feeder never writes into that memory. Releasing it (destructor, release()) marks a
// point in the consumer's CUDA stream: the feeder overwrites the memory only once that stream has passed
// the point, so kernels the consumer enqueued before releasing still read this batch's bytes. Nothing to
// record by hand, nothing to forget. A feeder whose every ring slot is held refuses to stage another
// batch (Error) rather than overwrite one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "conveyor/batch.h"
#include "conveyor/image.h"
#include "conveyor/ops/normalize.h"
#include "conveyor/tensor.h"

namespace conveyor {

namespace detail {
class SlotHold;
struct DeviceBatchAccess;

// What a DeviceBatch shows, as a feeder backend fills it in (DeviceBatchAccess::make).
struct DeviceBatchParts {
  TensorView pixels, labels, images;
  // The batch's field tensors where the consumer reads them (Batch::fields(), or their device copies); the
  // storage lives as long as the slot is held.
  std::span<const BatchTensor> fields;
  std::optional<ops::NormalizeParams> normalization;  // set with images
  bool augmented = false;
  std::span<const SampleInfo> samples;
  std::size_t size = 0;
  ImageShape shape;
  int device = -1;
  std::uint64_t sequence = 0, epoch = 0;
};
}  // namespace detail

class DeviceBatch {
 public:
  DeviceBatch() = default;
  DeviceBatch(DeviceBatch&&) noexcept = default;
  DeviceBatch& operator=(DeviceBatch&&) noexcept = default;
  DeviceBatch(const DeviceBatch&) = delete;
  DeviceBatch& operator=(const DeviceBatch&) = delete;
  ~DeviceBatch() = default;  // releases (see the top of this file)

  explicit operator bool() const noexcept { return hold_ != nullptr; }
  std::size_t size() const noexcept { return parts_.size; }
  ImageShape sample_shape() const noexcept { return parts_.shape; }
  bool on_device() const noexcept { return parts_.device >= 0; }
  int device() const noexcept { return parts_.device; }  // CUDA device index; -1 on the CPU
  std::uint64_t sequence() const noexcept { return parts_.sequence; }
  std::uint64_t epoch() const noexcept { return parts_.epoch; }

  // (N, H, W, C) uint8 as the pipeline made them (and the users' pixel twins after it, which work in place:
  // FeederOptions::pixel_ops), and (N) int64 labels.
  const TensorView& pixels() const noexcept { return parts_.pixels; }
  const TensorView& labels() const noexcept { return parts_.labels; }
  // The images as the model takes them, when the feeder was asked to make them (FeederOptions::normalize:
  // float32/float16/bfloat16, NCHW or NHWC, per-channel mean and std); an empty view otherwise.
  const TensorView& images() const noexcept { return parts_.images; }
  // How images() were made: the normalization asked for, and whether the feeder's per-pixel ops
  // (FeederOptions::augment) ran before it, so that images() hold what pixels() do not. Empty / false
  // without images().
  const std::optional<ops::NormalizeParams>& images_normalization() const noexcept {
    return parts_.normalization;
  }
  bool images_augmented() const noexcept { return parts_.augmented; }
  // Who each sample is (host memory, valid while the handle lives).
  std::span<const SampleInfo> samples() const noexcept { return parts_.samples; }

  // The batch's other fields (conveyor/fields.h), where pixels() are, as the pipeline made them: every field
  // tensor of the host batch (Batch::fields()), with its name, shape and padding; valid while the handle
  // lives. Empty for a batch without fields.
  std::span<const BatchTensor> fields() const noexcept { return parts_.fields; }
  // The field tensor named `name`; an empty view when the batch has none.
  const TensorView& field(std::string_view name) const noexcept;
  // Issue 35's names for them: masks (N, H, W) uint8 or uint16; boxes (N, M, 4) float32 with their classes
  // (N, M) int64 (-1 padding), crowd flags (N, M) uint8 and counts (N) int64; multi-hot labels (N, K) uint8.
  const TensorView& masks() const noexcept { return field("masks"); }
  const TensorView& boxes() const noexcept { return field("boxes"); }
  const TensorView& box_classes() const noexcept { return field("box_classes"); }
  const TensorView& box_crowd() const noexcept { return field("box_crowd"); }
  const TensorView& box_counts() const noexcept { return field("box_counts"); }
  const TensorView& multi_hot() const noexcept { return field("multi_hot"); }

  // Gives the batch back now (the destructor does the same).
  void release() noexcept { hold_.reset(); }
  // Keeps the batch held while the returned reference lives, after this handle is gone: for views
  // handed to other libraries (conveyor/cuda/dlpack.h).
  std::shared_ptr<const void> share_hold() const noexcept;

 private:
  friend struct detail::DeviceBatchAccess;
  std::shared_ptr<detail::SlotHold> hold_;
  detail::DeviceBatchParts parts_;
};

}  // namespace conveyor
