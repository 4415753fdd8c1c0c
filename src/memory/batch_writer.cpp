// BatchWriter and BatchBuffers (conveyor/batch_source.h): a pool buffer as a BatchSource fills it.
#include <memory>
#include <utility>

#include "conveyor/batch_source.h"
#include "conveyor/error.h"
#include "src/memory/batch_pool.h"

namespace conveyor {

std::size_t BatchWriter::capacity() const noexcept { return buffer_->capacity; }
bool BatchWriter::page_locked() const noexcept { return buffer_->pinned; }

TensorView BatchWriter::pixel_tensor() const noexcept {
  const ImageShape s = buffer_->shape;
  return TensorView::contiguous(buffer_->pixels, DType::uint8,
                                {static_cast<std::int64_t>(buffer_->capacity), s.height, s.width, s.channels},
                                -1, buffer_->pinned);
}

TensorView BatchWriter::label_tensor() const noexcept {
  return TensorView::contiguous(buffer_->labels, DType::int64, {static_cast<std::int64_t>(buffer_->capacity)},
                                -1, buffer_->pinned);
}

std::span<SampleInfo> BatchWriter::samples() const noexcept { return {buffer_->samples, buffer_->capacity}; }

TensorView BatchWriter::mask_tensor() const noexcept {
  if (!buffer_->masks) return {};
  const MaskShape s = buffer_->mask_shape;
  return TensorView::contiguous(buffer_->masks, s.type == MaskType::uint16 ? DType::uint16 : DType::uint8,
                                {static_cast<std::int64_t>(buffer_->capacity), s.height, s.width}, -1,
                                buffer_->pinned);
}

TensorView BatchWriter::multi_hot_tensor() const noexcept {
  if (!buffer_->multi_hot) return {};
  return TensorView::contiguous(
      buffer_->multi_hot, DType::uint8,
      {static_cast<std::int64_t>(buffer_->capacity), static_cast<std::int64_t>(buffer_->num_classes)}, -1,
      buffer_->pinned);
}

bool BatchWriter::has_boxes() const noexcept { return buffer_->boxes != nullptr; }

BatchWriter::BoxTensors BatchWriter::box_tensors(std::size_t max_boxes) {
  if (!buffer_->boxes) return {};
  if (fixed_max_boxes_ > 0 && max_boxes > fixed_max_boxes_)
    throw InvalidArgument("BatchWriter: " + std::to_string(max_boxes) +
                          " boxes per sample, the layout fixes " + std::to_string(fixed_max_boxes_));
  const std::size_t m = fixed_max_boxes_ > 0 ? fixed_max_boxes_ : max_boxes;
  buffer_->packed = buffer_->box_storage->reserve(buffer_->capacity, m);
  const detail::PackedBoxes& p = buffer_->packed;
  const auto n = static_cast<std::int64_t>(buffer_->capacity), mm = static_cast<std::int64_t>(m);
  const bool pinned = buffer_->pinned;
  return {TensorView::contiguous(p.boxes, DType::float32, {n, mm, 4}, -1, pinned),
          TensorView::contiguous(p.classes, DType::int64, {n, mm}, -1, pinned),
          TensorView::contiguous(p.crowd, DType::uint8, {n, mm}, -1, pinned),
          TensorView::contiguous(p.counts, DType::int64, {n}, -1, pinned)};
}

Batch BatchWriter::finish(std::size_t size, std::uint64_t sequence, std::uint64_t epoch) && {
  if (size > buffer_->capacity)
    throw InvalidArgument("BatchWriter::finish: " + std::to_string(size) + " samples in a buffer of " +
                          std::to_string(buffer_->capacity));
  // Nothing of a batch made elsewhere waits for a stage after batching.
  for (std::size_t i = 0; i < size; ++i) buffer_->samples[i].deferred = false;
  if (buffer_->boxes && buffer_->packed.boxes == nullptr) {  // none written: no boxes, but valid views
    const BoxTensors none = box_tensors(0);
    for (std::size_t i = 0; i < size; ++i) none.counts.as<std::int64_t>()[i] = 0;
  }
  return Batch(std::move(buffer_), size, sequence, epoch);
}

std::optional<BatchWriter> BatchBuffers::writer(std::shared_ptr<detail::BatchBuffer> buffer) const {
  if (!buffer) return std::nullopt;
  buffer->packed = {};  // the last batch's boxes are not this one's
  return BatchWriter(std::move(buffer), layout_.max_boxes);
}

std::optional<BatchWriter> BatchBuffers::acquire() const { return writer(pool_->acquire()); }

std::optional<BatchWriter> BatchBuffers::try_acquire() const { return writer(pool_->try_acquire()); }

std::size_t BatchBuffers::max_buffers() const noexcept { return pool_->max_buffers(); }
bool BatchBuffers::page_locked() const noexcept { return pool_->pinned(); }

}  // namespace conveyor
