// Device helpers shared by our kernels: float conversions of the storage types, 16-byte packs and the
// grid-stride loop over them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "src/device/float_convert.cuh"
#include "src/train/layers/tensor.h"

namespace conveyor::nn::kernels {

using ::conveyor::detail::from_float;
using ::conveyor::detail::to_float;

// 16 bytes of T: one vector load or store.
template <class T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

template <class T>
__device__ __forceinline__ Pack<T> load_pack(const void* base, std::size_t pack) {
  return reinterpret_cast<const Pack<T>*>(base)[pack];
}
template <class T>
__device__ __forceinline__ void store_pack(void* base, std::size_t pack, const Pack<T>& p) {
  reinterpret_cast<Pack<T>*>(base)[pack] = p;
}

// The grid-stride loop of an element-wise pass over `count` elements of T: pack(p) for every whole 16-byte
// pack p when `vector` (the pointers allow vector loads and stores), then element(e) for every element left
// (all of them when not), each thread of the grid taking every stride-th.
template <class T, class PackBody, class ElementBody>
__device__ __forceinline__ void for_packs_then_elements(std::size_t count, bool vector, PackBody pack,
                                                        ElementBody element) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  std::size_t done = 0;
  if (vector) {
    const std::size_t packs = count / Pack<T>::kSize;
    for (std::size_t p = i; p < packs; p += stride) pack(p);
    done = packs * Pack<T>::kSize;
  }
  for (std::size_t e = done + i; e < count; e += stride) element(e);
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Blocks for a grid-stride loop over `work` items with `threads` per block (at most 4 waves of 132 SMs'
// worth of blocks is plenty; more only adds scheduling).
inline unsigned grid_for(std::size_t work, unsigned threads) {
  const std::size_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 4096 ? (blocks ? blocks : 1) : 4096);
}

// Calls f.template operator()<T>() with T the device type of `type`.
template <class F>
void dispatch(DType type, F&& f) {
  switch (type) {
    case DType::f32:
      f.template operator()<float>();
      break;
    case DType::bf16:
      f.template operator()<__nv_bfloat16>();
      break;
    case DType::f16:
      f.template operator()<__half>();
      break;
  }
}

}  // namespace conveyor::nn::kernels
