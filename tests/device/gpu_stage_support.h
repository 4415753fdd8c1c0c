// Helpers for the GPU stage tests: skip without a GPU (saying why), move bytes to and from the device through
// the project's memory pool, and describe where two byte buffers first differ.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/cuda/device.h"
#include "src/device/cuda_check.h"
#include "src/device/cuda_handles.h"
#include "src/device/device_memory.h"

namespace conveyor::testing {

// Skips the test when no GPU is visible, with the reason the runtime gives.
#define CONVEYOR_SKIP_WITHOUT_GPU()                                             \
  if (::conveyor::list_gpus().empty()) /* NOLINT(bugprone-macro-parentheses) */ \
  GTEST_SKIP() << "no GPU visible: " << ::conveyor::gpu_unavailable_reason()

// A device buffer holding `bytes` (allocated from `pool` on `stream`; the stream is synchronised).
inline cuda::DeviceBuffer upload(cuda::DeviceMemoryPool& pool, const std::vector<std::uint8_t>& bytes,
                                 cudaStream_t stream, const char* what = "test input") {
  cuda::DeviceBuffer buffer = pool.allocate(bytes.size(), stream, what);
  CONVEYOR_CUDA(cudaMemcpyAsync(buffer.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream),
                what);
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), what);
  return buffer;
}

// `bytes` bytes at `device`, after everything queued on `stream`.
inline std::vector<std::uint8_t> download(const void* device, std::size_t bytes, cudaStream_t stream) {
  std::vector<std::uint8_t> host(bytes);
  CONVEYOR_CUDA(cudaMemcpyAsync(host.data(), device, bytes, cudaMemcpyDeviceToHost, stream), "test download");
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), "test download");
  return host;
}

}  // namespace conveyor::testing
