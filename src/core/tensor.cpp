#include "conveyor/tensor.h"

#include "conveyor/batch.h"

namespace conveyor {

const char* to_string(DType type) noexcept {
  switch (type) {
    case DType::uint8:
      return "uint8";
    case DType::int64:
      return "int64";
    case DType::float32:
      return "float32";
    case DType::float16:
      return "float16";
    case DType::bfloat16:
      return "bfloat16";
    case DType::uint16:
      return "uint16";
  }
  return "?";
}

TensorView Batch::pixel_tensor() const noexcept {
  if (!buffer_) return {};
  const ImageShape s = buffer_->shape;
  return TensorView::contiguous(buffer_->pixels, DType::uint8,
                                {static_cast<std::int64_t>(size_), s.height, s.width, s.channels}, -1,
                                buffer_->pinned);
}

TensorView Batch::label_tensor() const noexcept {
  if (!buffer_) return {};
  return TensorView::contiguous(buffer_->labels, DType::int64, {static_cast<std::int64_t>(size_)}, -1,
                                buffer_->pinned);
}

TensorView Batch::mask_tensor() const noexcept {
  if (!has_masks()) return {};
  const MaskShape s = buffer_->mask_shape;
  return TensorView::contiguous(buffer_->masks, s.type == MaskType::uint16 ? DType::uint16 : DType::uint8,
                                {static_cast<std::int64_t>(size_), s.height, s.width}, -1, buffer_->pinned);
}

std::span<const Box> Batch::boxes(std::size_t i) const noexcept {
  if (!has_boxes() || i >= size_) return {};
  const detail::PackedBoxes& p = buffer_->packed;
  return {p.boxes + i * p.max_boxes, static_cast<std::size_t>(p.counts[i])};
}

std::span<const std::int64_t> Batch::box_classes(std::size_t i) const noexcept {
  if (!has_boxes() || i >= size_) return {};
  const detail::PackedBoxes& p = buffer_->packed;
  return {p.classes + i * p.max_boxes, static_cast<std::size_t>(p.counts[i])};
}

TensorView Batch::box_tensor() const noexcept {
  if (!has_boxes()) return {};
  const detail::PackedBoxes& p = buffer_->packed;
  return TensorView::contiguous(p.boxes, DType::float32,
                                {static_cast<std::int64_t>(size_), static_cast<std::int64_t>(p.max_boxes), 4},
                                -1, buffer_->pinned);
}

TensorView Batch::box_class_tensor() const noexcept {
  if (!has_boxes()) return {};
  const detail::PackedBoxes& p = buffer_->packed;
  return TensorView::contiguous(p.classes, DType::int64,
                                {static_cast<std::int64_t>(size_), static_cast<std::int64_t>(p.max_boxes)},
                                -1, buffer_->pinned);
}

TensorView Batch::box_crowd_tensor() const noexcept {
  if (!has_boxes()) return {};
  const detail::PackedBoxes& p = buffer_->packed;
  return TensorView::contiguous(p.crowd, DType::uint8,
                                {static_cast<std::int64_t>(size_), static_cast<std::int64_t>(p.max_boxes)},
                                -1, buffer_->pinned);
}

TensorView Batch::box_count_tensor() const noexcept {
  if (!has_boxes()) return {};
  return TensorView::contiguous(buffer_->packed.counts, DType::int64, {static_cast<std::int64_t>(size_)}, -1,
                                buffer_->pinned);
}

TensorView Batch::multi_hot_tensor() const noexcept {
  if (!has_multi_hot()) return {};
  return TensorView::contiguous(
      buffer_->multi_hot, DType::uint8,
      {static_cast<std::int64_t>(size_), static_cast<std::int64_t>(buffer_->num_classes)}, -1,
      buffer_->pinned);
}

}  // namespace conveyor
