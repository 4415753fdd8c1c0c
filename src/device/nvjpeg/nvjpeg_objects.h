// RAII owners of nvJPEG's objects (handle, states, streams, parameters, decoders, buffers): each one is
// destroyed with the library's own function. Owners of objects made from a handle must die before it:
// declare the handle first.
#pragma once

#include <string_view>
#include <utility>

#include "src/device/nvjpeg/nvjpeg_library.h"

namespace conveyor::nvjpeg {

template <class T>
class Owned {
 public:
  using Destroy = Status (*)(T);

  Owned() = default;
  Owned(T object, Destroy destroy) noexcept : object_(object), destroy_(destroy) {}
  ~Owned() { reset(); }
  Owned(Owned&& other) noexcept
      : object_(std::exchange(other.object_, nullptr)), destroy_(std::exchange(other.destroy_, nullptr)) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      object_ = std::exchange(other.object_, nullptr);
      destroy_ = std::exchange(other.destroy_, nullptr);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  T get() const noexcept { return object_; }
  explicit operator bool() const noexcept { return object_ != nullptr; }
  void reset() noexcept {
    if (object_ != nullptr && destroy_ != nullptr) destroy_(object_);  // nothing to report to in a destructor
    object_ = nullptr;
  }

 private:
  T object_ = nullptr;
  Destroy destroy_ = nullptr;
};

// Makes an object with `create(args..., &object)`, checked: Owned<T>(make<T>(api.x_create, api.x_destroy,
// "nvjpegXCreate", context, handle)).
template <class T, class Create, class... Args>
Owned<T> make(Create create, Status (*destroy)(T), std::string_view call, std::string_view context,
              Args... args) {
  T object = nullptr;
  check(create(args..., &object), call, context);
  return Owned<T>(object, destroy);
}

}  // namespace conveyor::nvjpeg
