#include <algorithm>
#include <cstdint>

#include "bench/pipeline/device_checksum.h"
#include "src/device/cuda_check.h"

namespace pipeline_bench {
namespace {

constexpr const char* kContext = "pipeline_throughput (device checksum)";
constexpr int kThreads = 256;

__device__ unsigned long long mix(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Word i of the data (the last one padded with zeros) contributes mix(word ^ mix(i + salt * 2^40)).
__global__ void checksum_kernel(const unsigned char* __restrict__ data, unsigned long long bytes,
                                bool aligned, unsigned long long salt, unsigned long long* sum) {
  const unsigned long long words = (bytes + 7) / 8;
  unsigned long long local = 0;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < words; i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    unsigned long long word = 0;
    if (aligned && i * 8 + 8 <= bytes) {
      word = reinterpret_cast<const unsigned long long*>(data)[i];  // the same value on a little-endian GPU
    } else {
      for (int b = 0; b < 8; ++b) {
        const unsigned long long at = i * 8 + b;
        if (at < bytes) word |= static_cast<unsigned long long>(data[at]) << (8 * b);
      }
    }
    local += mix(word ^ mix(i + (salt << 40)));
  }
  for (int offset = 16; offset > 0; offset /= 2) local += __shfl_down_sync(0xffffffffu, local, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, local);
}

}  // namespace

DeviceChecksum::DeviceChecksum() {
  CONVEYOR_CUDA(cudaMalloc(&sum_, sizeof *sum_), kContext);
  CONVEYOR_CUDA(cudaMemset(sum_, 0, sizeof *sum_), kContext);
}

DeviceChecksum::~DeviceChecksum() { cudaFree(sum_); }

void DeviceChecksum::add(const void* data, std::size_t bytes, std::uint64_t salt, cudaStream_t stream) {
  if (bytes == 0) return;
  const unsigned long long words = (bytes + 7) / 8;
  const unsigned blocks =
      static_cast<unsigned>(std::min<unsigned long long>((words + kThreads - 1) / kThreads, 4096));
  const bool aligned = reinterpret_cast<std::uintptr_t>(data) % 8 == 0;
  checksum_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const unsigned char*>(data), bytes, aligned,
                                                   salt, sum_);
  CONVEYOR_CUDA(cudaGetLastError(), kContext);
}

std::uint64_t DeviceChecksum::value(cudaStream_t stream) const {
  unsigned long long host = 0;
  CONVEYOR_CUDA(cudaMemcpyAsync(&host, sum_, sizeof host, cudaMemcpyDeviceToHost, stream), kContext);
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), kContext);
  return host;
}

}  // namespace pipeline_bench
