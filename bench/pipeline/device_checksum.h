// A checksum of device memory, computed on the GPU where the bytes are, so that a benchmark that ends on
// the device can show its output is the same run to run without copying every batch back. Each 8-byte word
// is mixed with its position and the caller's salt (say, the batch's sequence number) and the mixes are
// summed: two runs that made the same bytes in the same batches give the same value.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace pipeline_bench {

class DeviceChecksum {
 public:
  // Device memory for the running sum, on the current device.
  DeviceChecksum();
  ~DeviceChecksum();
  DeviceChecksum(const DeviceChecksum&) = delete;
  DeviceChecksum& operator=(const DeviceChecksum&) = delete;

  // Enqueues the mix of `bytes` bytes at `data` (device memory) on `stream`.
  void add(const void* data, std::size_t bytes, std::uint64_t salt, cudaStream_t stream);
  // The sum so far: waits for `stream`.
  std::uint64_t value(cudaStream_t stream) const;

 private:
  unsigned long long* sum_ = nullptr;
};

}  // namespace pipeline_bench
