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

const BatchTensor* Batch::field(std::string_view name) const noexcept {
  if (!buffer_) return nullptr;
  for (const BatchTensor& tensor : buffer_->field_tensors)
    if (tensor.name == name) return &tensor;
  return nullptr;
}

MaskShape Batch::mask_shape() const noexcept {
  const BatchTensor* masks = field("masks");
  if (masks == nullptr) return {};
  return {static_cast<int>(masks->view.shape[1]), static_cast<int>(masks->view.shape[2]),
          masks->view.dtype == DType::uint16 ? MaskType::uint16 : MaskType::uint8};
}

ConstMaskView Batch::mask(std::size_t i) const noexcept {
  const BatchTensor* masks = field("masks");
  if (masks == nullptr || i >= size_) return {};
  const MaskShape shape = mask_shape();
  return ConstMaskView(masks->view.as<const std::uint8_t>() + i * shape.bytes(), shape);
}

std::size_t Batch::max_boxes() const noexcept {
  const BatchTensor* boxes = field("boxes");
  return boxes ? static_cast<std::size_t>(boxes->view.shape[1]) : 0;
}

namespace {

// Sample i's first `count` entries of a (N, M, ...) padded tensor of T.
template <class T>
std::span<const T> sample_entries(const TensorView& padded, const TensorView& counts, std::size_t i,
                                  std::size_t per_entry) noexcept {
  const auto m = static_cast<std::size_t>(padded.shape[1]);
  return {padded.as<const T>() + i * m * per_entry,
          static_cast<std::size_t>(counts.as<const std::int64_t>()[i])};
}

}  // namespace

std::span<const Box> Batch::boxes(std::size_t i) const noexcept {
  const BatchTensor* boxes = field("boxes");
  const BatchTensor* counts = field("box_counts");
  if (boxes == nullptr || counts == nullptr || i >= size_) return {};
  const std::span<const float> corners = sample_entries<float>(boxes->view, counts->view, i, 4);
  return {reinterpret_cast<const Box*>(corners.data()), corners.size()};
}

std::span<const std::int64_t> Batch::box_classes(std::size_t i) const noexcept {
  const BatchTensor* classes = field("box_classes");
  const BatchTensor* counts = field("box_counts");
  if (classes == nullptr || counts == nullptr || i >= size_) return {};
  return sample_entries<std::int64_t>(classes->view, counts->view, i, 1);
}

}  // namespace conveyor
