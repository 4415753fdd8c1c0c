#include "src/device/device_memory.h"

#include <cstdint>
#include <string>

#include "conveyor/error.h"
#include "src/device/cuda_check.h"
#include "src/device/cuda_handles.h"

namespace conveyor::cuda {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::exchange(other.pool_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  if (data_ && pool_) pool_->release(data_, bytes_, stream_);
  pool_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

DeviceMemoryPool::DeviceMemoryPool(int device, std::size_t limit_bytes)
    : device_(device), limit_(limit_bytes) {
  DeviceGuard guard(device);
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  CONVEYOR_CUDA(cudaMemPoolCreate(&pool_, &props), "DeviceMemoryPool");
  // Keep freed memory in the pool instead of returning it to the driver at every synchronisation:
  // steps allocate the same sizes again and again.
  std::uint64_t keep = UINT64_MAX;
  CONVEYOR_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep), "DeviceMemoryPool");
}

DeviceMemoryPool::~DeviceMemoryPool() {
  cudaDeviceSynchronize();
  cudaMemPoolDestroy(pool_);
}

std::size_t DeviceMemoryPool::limit_from_fraction(int device, double fraction) {
  if (!(fraction > 0.0 && fraction <= 1.0))
    throw InvalidArgument("device memory fraction must be in (0, 1], got " + std::to_string(fraction));
  DeviceGuard guard(device);
  std::size_t free_bytes = 0, total_bytes = 0;
  CONVEYOR_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "DeviceMemoryPool::limit_from_fraction");
  return static_cast<std::size_t>(static_cast<double>(total_bytes) * fraction);
}

DeviceBuffer DeviceMemoryPool::allocate(std::size_t bytes, cudaStream_t stream, std::string_view what_for) {
  if (bytes == 0) return {};
  const std::size_t used = in_use_.load();
  if (limit_ && used + bytes > limit_)
    throw DeviceMemoryError(std::string(what_for), bytes, limit_ > used ? limit_ - used : 0, limit_);
  void* data = nullptr;
  const cudaError_t status = cudaMallocFromPoolAsync(&data, bytes, pool_, stream);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free error so later calls are not blamed for it
    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw DeviceMemoryError(std::string(what_for), bytes, free_bytes, limit_);
  }
  CONVEYOR_CUDA(status, std::string("DeviceMemoryPool::allocate for ") + std::string(what_for));
  const std::size_t now = in_use_ += bytes;
  std::size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return DeviceBuffer(this, data, bytes, stream);
}

void DeviceMemoryPool::release(void* data, std::size_t bytes, cudaStream_t stream) noexcept {
  cudaFreeAsync(data, stream);
  in_use_ -= bytes;
}

}  // namespace conveyor::cuda
