// Segmentation masks: one channel of class ids per pixel, 8 or 16 bits (as the PNG stores them). A
// non-owning view and an owning mask whose storage is reused, like conveyor/image.h's images.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace conveyor {

// The element type of a mask: what its PNG stores (8-bit gray or palette indices, or 16-bit gray).
enum class MaskType : std::uint8_t { uint8, uint16 };

constexpr std::size_t mask_type_size(MaskType type) noexcept { return type == MaskType::uint16 ? 2 : 1; }
// "uint8" or "uint16".
const char* to_string(MaskType type) noexcept;

// Height x width class ids of one type.
struct MaskShape {
  int height = 0;
  int width = 0;
  MaskType type = MaskType::uint8;

  std::size_t bytes() const noexcept {
    return static_cast<std::size_t>(height) * static_cast<std::size_t>(width) * mask_type_size(type);
  }
  bool empty() const noexcept { return height <= 0 || width <= 0; }
  friend bool operator==(const MaskShape&, const MaskShape&) = default;
};

// A view of class ids someone else owns. `stride` is the distance in bytes between the starts of two rows
// (at least width * the element size).
template <class Byte>
struct BasicMaskView {
  Byte* data = nullptr;
  int height = 0;
  int width = 0;
  MaskType type = MaskType::uint8;
  std::ptrdiff_t stride = 0;

  BasicMaskView() = default;
  BasicMaskView(Byte* data_, MaskShape shape, std::ptrdiff_t stride_ = 0) noexcept
      : data(data_),
        height(shape.height),
        width(shape.width),
        type(shape.type),
        stride(stride_ ? stride_ : static_cast<std::ptrdiff_t>(shape.width * mask_type_size(shape.type))) {}
  template <class Other>
  BasicMaskView(const BasicMaskView<Other>& other) noexcept  // NOLINT(google-explicit-constructor)
      : data(other.data), height(other.height), width(other.width), type(other.type), stride(other.stride) {}

  MaskShape shape() const noexcept { return {height, width, type}; }
  bool empty() const noexcept { return data == nullptr || shape().empty(); }
  std::size_t element_size() const noexcept { return mask_type_size(type); }
  Byte* row(int y) const noexcept { return data + static_cast<std::ptrdiff_t>(y) * stride; }
  // The class id at (y, x), whatever the type.
  std::uint32_t at(int y, int x) const noexcept {
    const Byte* p = row(y) + static_cast<std::ptrdiff_t>(x) * static_cast<std::ptrdiff_t>(element_size());
    if (type == MaskType::uint8) return *p;
    std::uint16_t value;
    __builtin_memcpy(&value, p, 2);
    return value;
  }
};

using MaskView = BasicMaskView<std::uint8_t>;
using ConstMaskView = BasicMaskView<const std::uint8_t>;

// A mask that owns contiguous class ids. reshape() keeps the allocation when it is large enough.
class Mask {
 public:
  Mask() = default;
  explicit Mask(MaskShape shape) { reshape(shape); }

  // Sets the shape; the values are unspecified afterwards unless the shape is unchanged.
  void reshape(MaskShape shape) {
    if (shape.bytes() > storage_.size()) storage_.resize(shape.bytes());
    shape_ = shape;
  }
  void clear() noexcept { shape_ = {}; }

  MaskShape shape() const noexcept { return shape_; }
  bool empty() const noexcept { return shape_.empty(); }
  MaskView view() noexcept { return empty() ? MaskView{} : MaskView(storage_.data(), shape_); }
  ConstMaskView view() const noexcept {
    return empty() ? ConstMaskView{} : ConstMaskView(storage_.data(), shape_);
  }

 private:
  std::vector<std::uint8_t> storage_;
  MaskShape shape_;
};

}  // namespace conveyor
