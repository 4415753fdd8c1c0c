#include "src/device/device_bound_memory.h"

#include <utility>

#include "src/device/cuda_handles.h"

namespace conveyor::cuda {
namespace {

class DeviceBoundMemory final : public HostMemoryResource {
 public:
  DeviceBoundMemory(std::shared_ptr<HostMemoryResource> memory, int device)
      : memory_(std::move(memory)), device_(device) {}

  void* allocate(std::size_t bytes) override {
    const DeviceGuard guard(device_);
    return memory_->allocate(bytes);
  }
  void deallocate(void* memory, std::size_t bytes) noexcept override {
    try {
      const DeviceGuard guard(device_);
      memory_->deallocate(memory, bytes);
    } catch (...) {
      memory_->deallocate(memory, bytes);  // the device could not be made current: free it all the same
    }
  }
  bool page_locked() const noexcept override { return memory_->page_locked(); }

 private:
  const std::shared_ptr<HostMemoryResource> memory_;
  const int device_;
};

}  // namespace

std::shared_ptr<HostMemoryResource> with_device(std::shared_ptr<HostMemoryResource> memory, int device) {
  return std::make_shared<DeviceBoundMemory>(std::move(memory), device);
}

}  // namespace conveyor::cuda
