// Device memory from one stream-ordered pool per device (cudaMallocFromPoolAsync). By default the pool
// grows as needed; with a limit, an allocation that would pass it throws DeviceMemoryError naming what it
// was for, how much was asked and how much is left, before any CUDA, cuDNN or cuBLAS call can fail later.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <string_view>
#include <utility>

namespace conveyor::cuda {

class DeviceMemoryPool;

// A device allocation that returns to its pool, in stream order, when it dies.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const noexcept { return data_; }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const noexcept { return bytes_; }
  explicit operator bool() const noexcept { return data_ != nullptr; }
  void reset() noexcept;

 private:
  friend class DeviceMemoryPool;
  DeviceBuffer(DeviceMemoryPool* pool, void* data, std::size_t bytes, cudaStream_t stream) noexcept
      : pool_(pool), data_(data), bytes_(bytes), stream_(stream) {}
  DeviceMemoryPool* pool_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
};

class DeviceMemoryPool {
 public:
  // limit_bytes == 0: no limit but the card's memory.
  explicit DeviceMemoryPool(int device, std::size_t limit_bytes = 0);
  ~DeviceMemoryPool();
  DeviceMemoryPool(const DeviceMemoryPool&) = delete;
  DeviceMemoryPool& operator=(const DeviceMemoryPool&) = delete;

  // The limit that is `fraction` (0, 1] of the device's total memory.
  static std::size_t limit_from_fraction(int device, double fraction);

  // Stream-ordered allocation, usable on `stream` at once and on other streams after synchronisation.
  // Throws DeviceMemoryError when the limit or the card would be exceeded.
  DeviceBuffer allocate(std::size_t bytes, cudaStream_t stream, std::string_view what_for);

  int device() const noexcept { return device_; }
  std::size_t limit() const noexcept { return limit_; }
  std::size_t in_use() const noexcept { return in_use_.load(); }
  std::size_t peak() const noexcept { return peak_.load(); }

 private:
  friend class DeviceBuffer;
  void release(void* data, std::size_t bytes, cudaStream_t stream) noexcept;

  int device_;
  std::size_t limit_;
  cudaMemPool_t pool_ = nullptr;
  std::atomic<std::size_t> in_use_{0};
  std::atomic<std::size_t> peak_{0};
};

}  // namespace conveyor::cuda
