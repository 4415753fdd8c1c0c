#include "slow_reader.h"
#include "src/device/cuda_check.h"

namespace conveyor::testing {
namespace {

// One block: spins first (so the feeder, racing ahead on the host, has every chance to overwrite the
// slot if it were allowed to), then reads every byte.
__global__ void slow_checksum(const std::uint8_t* bytes, std::size_t count, unsigned long long* out,
                              long long spin_cycles) {
  if (threadIdx.x == 0) {
    const long long start = clock64();
    while (clock64() - start < spin_cycles) {
    }
  }
  __syncthreads();
  unsigned long long sum = 0;
  for (std::size_t i = threadIdx.x; i < count; i += blockDim.x)
    sum += static_cast<unsigned long long>(bytes[i]) * (i + 1);
  atomicAdd(out, sum);
}

}  // namespace

void launch_slow_checksum(const std::uint8_t* bytes, std::size_t count, std::uint64_t* out,
                          long long spin_cycles, cudaStream_t stream) {
  slow_checksum<<<1, 256, 0, stream>>>(bytes, count, reinterpret_cast<unsigned long long*>(out), spin_cycles);
  CONVEYOR_CUDA(cudaGetLastError(), "slow_checksum (test kernel)");
}

}  // namespace conveyor::testing
