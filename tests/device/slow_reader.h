// A deliberately slow reader of device memory, for the feeder's no-overwrite test: spins, then sums.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace conveyor::testing {

// The same sum on the host: sum of byte[i] * (i + 1), modulo 2^64.
inline std::uint64_t checksum(const std::uint8_t* bytes, std::size_t count) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < count; ++i) sum += static_cast<std::uint64_t>(bytes[i]) * (i + 1);
  return sum;
}

// On `stream`: waits about `spin_cycles` GPU clock cycles, then writes checksum(bytes, count) to *out.
// Throws DeviceError when the launch fails.
void launch_slow_checksum(const std::uint8_t* bytes, std::size_t count, std::uint64_t* out,
                          long long spin_cycles, cudaStream_t stream);

}  // namespace conveyor::testing
