// Element types and tensor views the layers pass around. A Tensor does not own memory: on a CPU context
// it points into host memory, on a GPU context into device memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "conveyor/train/nn/shape.h"

namespace conveyor::nn {

// The precision activations and filters are stored in. Master weights, batch-norm parameters and
// statistics are float32 whatever this is.
enum class DType : std::uint8_t { f32, bf16, f16 };

constexpr std::size_t element_size(DType type) noexcept { return type == DType::f32 ? 4 : 2; }
constexpr const char* to_string(DType type) noexcept {
  return type == DType::f32 ? "fp32" : type == DType::bf16 ? "bf16" : "fp16";
}

struct Tensor {
  void* data = nullptr;
  Shape4 shape;
  DType dtype = DType::f32;

  std::size_t count() const noexcept { return shape.count(); }
  std::size_t bytes() const noexcept { return shape.count() * element_size(dtype); }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data);
  }
  explicit operator bool() const noexcept { return data != nullptr; }
};

}  // namespace conveyor::nn
