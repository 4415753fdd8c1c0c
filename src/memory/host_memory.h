// Host memory for batch buffers: page-locked (cudaHostAlloc) when asked for and a GPU is present, so
// that copies to the device can be asynchronous; 64-byte-aligned pageable memory otherwise.
#pragma once

#include <cstddef>

namespace conveyor::detail {

// True when this build has CUDA and the runtime sees at least one device now.
bool cuda_device_present() noexcept;

class HostAllocation {
 public:
  static constexpr std::size_t kAlignment = 64;

  HostAllocation() = default;
  // `bytes` bytes, page-locked when `pinned` (requires a CUDA build; throws DeviceError when the
  // allocation fails), else aligned to kAlignment.
  HostAllocation(std::size_t bytes, bool pinned);
  ~HostAllocation();
  HostAllocation(HostAllocation&& other) noexcept;
  HostAllocation& operator=(HostAllocation&& other) noexcept;
  HostAllocation(const HostAllocation&) = delete;
  HostAllocation& operator=(const HostAllocation&) = delete;

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool pinned() const noexcept { return pinned_; }

 private:
  void reset() noexcept;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool pinned_ = false;
};

}  // namespace conveyor::detail
