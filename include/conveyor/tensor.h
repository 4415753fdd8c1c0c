// A dense tensor as other libraries describe one: where it is, its element type, shape and strides. What
// conveyor hands to a framework (conveyor/dlpack.h, conveyor/cuda/dlpack.h) without copying.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace conveyor {

enum class DType : std::uint8_t { uint8, int64, float32, float16, bfloat16, uint16 };

// Bytes of one element.
constexpr std::size_t dtype_size(DType type) noexcept {
  switch (type) {
    case DType::uint8:
      return 1;
    case DType::int64:
      return 8;
    case DType::float32:
      return 4;
    case DType::float16:
    case DType::bfloat16:
    case DType::uint16:
      return 2;
  }
  return 0;
}

const char* to_string(DType type) noexcept;

struct TensorView {
  static constexpr int kMaxDims = 4;

  void* data = nullptr;
  DType dtype = DType::uint8;
  int ndim = 0;
  std::array<std::int64_t, kMaxDims> shape{};
  std::array<std::int64_t, kMaxDims> strides{};  // in elements, not bytes
  int device = -1;                               // CUDA device index; -1: host memory
  bool pinned = false;                           // host memory that is page-locked

  explicit operator bool() const noexcept { return data != nullptr; }
  bool on_device() const noexcept { return device >= 0; }
  std::size_t elements() const noexcept {
    std::size_t n = ndim > 0 ? 1 : 0;
    for (int i = 0; i < ndim; ++i) n *= static_cast<std::size_t>(shape[static_cast<std::size_t>(i)]);
    return n;
  }
  std::size_t bytes() const noexcept { return elements() * dtype_size(dtype); }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data);
  }

  // A contiguous (row-major) tensor of the given shape.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                               int device = -1, bool pinned = false) noexcept {
    TensorView view;
    view.data = data;
    view.dtype = dtype;
    view.ndim = static_cast<int>(shape.size());
    std::size_t i = 0;
    for (std::int64_t extent : shape) view.shape[i++] = extent;
    std::int64_t stride = 1;
    for (int d = view.ndim - 1; d >= 0; --d) {
      view.strides[static_cast<std::size_t>(d)] = stride;
      stride *= view.shape[static_cast<std::size_t>(d)];
    }
    view.device = device;
    view.pinned = pinned;
    return view;
  }
};

}  // namespace conveyor
