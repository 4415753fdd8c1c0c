// 8-bit images in HWC layout: a non-owning view, and an owning image whose storage is reused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace conveyor {

// Height x width x channels of an 8-bit HWC image.
struct ImageShape {
  int height = 0;
  int width = 0;
  int channels = 0;

  std::size_t bytes() const noexcept {
    return static_cast<std::size_t>(height) * static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  }
  bool empty() const noexcept { return height <= 0 || width <= 0 || channels <= 0; }
  friend bool operator==(const ImageShape&, const ImageShape&) = default;
};

// A view of pixels someone else owns. Rows may be padded: `stride` is the distance in bytes between
// the starts of two rows (at least width * channels).
template <class Byte>
struct BasicImageView {
  Byte* data = nullptr;
  int height = 0;
  int width = 0;
  int channels = 0;
  std::ptrdiff_t stride = 0;

  BasicImageView() = default;
  BasicImageView(Byte* data_, ImageShape shape, std::ptrdiff_t stride_ = 0) noexcept
      : data(data_), height(shape.height), width(shape.width), channels(shape.channels),
        stride(stride_ ? stride_ : static_cast<std::ptrdiff_t>(shape.width) * shape.channels) {}
  // A mutable view converts to a const one.
  template <class Other>
  BasicImageView(const BasicImageView<Other>& other) noexcept  // NOLINT(google-explicit-constructor)
      : data(other.data), height(other.height), width(other.width), channels(other.channels),
        stride(other.stride) {}

  ImageShape shape() const noexcept { return {height, width, channels}; }
  bool empty() const noexcept { return data == nullptr || shape().empty(); }
  bool contiguous() const noexcept { return stride == static_cast<std::ptrdiff_t>(width) * channels; }
  Byte* row(int y) const noexcept { return data + static_cast<std::ptrdiff_t>(y) * stride; }
  Byte* at(int y, int x) const noexcept { return row(y) + static_cast<std::ptrdiff_t>(x) * channels; }
};

using ImageView = BasicImageView<std::uint8_t>;
using ConstImageView = BasicImageView<const std::uint8_t>;

// An image that owns contiguous pixels. reshape() keeps the allocation when it is large enough, so an
// Image reused across samples stops allocating once it has seen the largest one.
class Image {
 public:
  Image() = default;
  explicit Image(ImageShape shape) { reshape(shape); }
  Image(int height, int width, int channels) : Image(ImageShape{height, width, channels}) {}

  // Sets the shape; the pixels are unspecified afterwards unless the shape is unchanged.
  void reshape(ImageShape shape) {
    if (shape.bytes() > storage_.size()) storage_.resize(shape.bytes());
    shape_ = shape;
  }
  void clear() noexcept { shape_ = {}; }

  ImageShape shape() const noexcept { return shape_; }
  int height() const noexcept { return shape_.height; }
  int width() const noexcept { return shape_.width; }
  int channels() const noexcept { return shape_.channels; }
  bool empty() const noexcept { return shape_.empty(); }
  std::uint8_t* data() noexcept { return storage_.data(); }
  const std::uint8_t* data() const noexcept { return storage_.data(); }

  ImageView view() noexcept { return empty() ? ImageView{} : ImageView(storage_.data(), shape_); }
  ConstImageView view() const noexcept {
    return empty() ? ConstImageView{} : ConstImageView(storage_.data(), shape_);
  }

 private:
  std::vector<std::uint8_t> storage_;
  ImageShape shape_;
};

}  // namespace conveyor
