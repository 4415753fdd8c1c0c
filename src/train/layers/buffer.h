// Memory a layer or a model owns on its context: host memory on the CPU reference, device memory from the
// context's pool on a GPU. Which of the two is decided by the context that made the buffer (its Storage);
// a Buffer only holds it and hands out the address, so the code that uses buffers is the same for both.
#pragma once

#include <cstddef>
#include <memory>

#include "src/train/layers/tensor.h"

namespace conveyor::nn {

// What keeps a buffer's bytes alive; the context that allocated them says how (a host vector, or a device
// allocation that goes back to its pool in stream order). Destroying it frees them.
class Storage {
 public:
  virtual ~Storage() = default;
};

// Zero-filled memory from Context::allocate, freed when the buffer dies.
class Buffer {
 public:
  Buffer() = default;
  Buffer(std::unique_ptr<Storage> storage, void* data, std::size_t bytes) noexcept
      : storage_(std::move(storage)), data_(data), bytes_(bytes) {}

  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data_);
  }
  // A view of the first shape.count() elements of `type`; throws InvalidArgument when they do not fit.
  Tensor tensor(Shape4 shape, DType type) const;

 private:
  std::unique_ptr<Storage> storage_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace conveyor::nn
