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

}  // namespace conveyor
