// Float conversions of the device storage types (float, half, bfloat16), round to nearest even: shared by
// the image ops' normalize kernel and the network's kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace conveyor::detail {

// The element types tensors are stored in on the device. Their own conversions do the work: __half's and
// __nv_bfloat16's constructors from float round to nearest even (__float2half_rn, __float2bfloat16_rn),
// their conversions to float are exact.
template <class T>
concept DeviceFloat =
    std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <DeviceFloat T>
__device__ __forceinline__ float to_float(T v) {
  return static_cast<float>(v);
}

template <DeviceFloat T>
__device__ __forceinline__ T from_float(float v) {
  return static_cast<T>(v);
}

}  // namespace conveyor::detail
