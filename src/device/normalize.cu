// normalize_batch on the GPU. Each thread reads 16 input bytes with one 16-byte load and, for NHWC
// output, writes its 16 results with 16-byte stores; NCHW output scatters each byte to its channel's
// plane (consecutive threads still write consecutive addresses within a plane).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "conveyor/error.h"
#include "src/device/cuda_check.h"
#include "src/device/float_convert.cuh"
#include "src/device/normalize.h"

namespace conveyor::ops {
namespace {

using ::conveyor::detail::from_float;

struct Affine {
  float scale[4];
  float bias[4];
};

// Element i of the NHWC input goes to out_index(i) of the output.
template <bool Nchw>
__device__ __forceinline__ std::size_t out_index(std::size_t i, int channels, std::size_t image_elems,
                                                 std::size_t plane) {
  if constexpr (!Nchw) {
    return i;
  } else {
    const std::size_t n = i / image_elems, rest = i - n * image_elems;
    const std::size_t pixel = rest / channels, c = rest - pixel * channels;
    return n * image_elems + c * plane + pixel;
  }
}

template <class Out, bool Nchw, bool Vector>
__global__ void normalize_kernel(const std::uint8_t* __restrict__ in, std::size_t total, int channels,
                                 std::size_t image_elems, std::size_t plane, Affine a,
                                 Out* __restrict__ out) {
  const std::size_t chunks = (total + 15) / 16;
  for (std::size_t chunk = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; chunk < chunks;
       chunk += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t base = chunk * 16;
    int c = static_cast<int>(base % channels);
    if (Vector && base + 16 <= total) {
      alignas(16) std::uint8_t bytes[16];
      *reinterpret_cast<uint4*>(bytes) = __ldg(reinterpret_cast<const uint4*>(in) + chunk);
      alignas(16) Out values[16];
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        values[j] = from_float<Out>(fmaf(static_cast<float>(bytes[j]), a.scale[c], a.bias[c]));
        c = c + 1 == channels ? 0 : c + 1;
      }
      if constexpr (!Nchw) {
        // 16 outputs are 64 (float) or 32 (16-bit) contiguous, aligned bytes.
        constexpr int kStores = 16 * sizeof(Out) / 16;
        uint4* dst = reinterpret_cast<uint4*>(out + base);
#pragma unroll
        for (int s = 0; s < kStores; ++s) dst[s] = reinterpret_cast<const uint4*>(values)[s];
      } else {
#pragma unroll
        for (int j = 0; j < 16; ++j) out[out_index<true>(base + j, channels, image_elems, plane)] = values[j];
      }
    } else {
      for (std::size_t i = base; i < total && i < base + 16; ++i) {
        out[out_index<Nchw>(i, channels, image_elems, plane)] =
            from_float<Out>(fmaf(static_cast<float>(in[i]), a.scale[c], a.bias[c]));
        c = c + 1 == channels ? 0 : c + 1;
      }
    }
  }
}

template <class Out, bool Nchw>
void launch(const std::uint8_t* in, std::size_t total, int channels, std::size_t image_elems,
            std::size_t plane, const Affine& a, void* out, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::size_t chunks = (total + 15) / 16;
  const unsigned blocks =
      static_cast<unsigned>(std::min<std::size_t>((chunks + kThreads - 1) / kThreads, 65535));
  // The vector path needs a 16-byte aligned input (device allocations are; an offset view may not be).
  if (reinterpret_cast<std::uintptr_t>(in) % 16 == 0 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0)
    normalize_kernel<Out, Nchw, true>
        <<<blocks, kThreads, 0, stream>>>(in, total, channels, image_elems, plane, a, static_cast<Out*>(out));
  else
    normalize_kernel<Out, Nchw, false>
        <<<blocks, kThreads, 0, stream>>>(in, total, channels, image_elems, plane, a, static_cast<Out*>(out));
  CONVEYOR_CUDA(cudaGetLastError(), "normalize_batch_cuda");
}

template <class Out>
void launch_layout(TensorLayout layout, const std::uint8_t* in, std::size_t total, int channels,
                   std::size_t image_elems, std::size_t plane, const Affine& a, void* out,
                   cudaStream_t stream) {
  if (layout == TensorLayout::chw)
    launch<Out, true>(in, total, channels, image_elems, plane, a, out, stream);
  else
    launch<Out, false>(in, total, channels, image_elems, plane, a, out, stream);
}

}  // namespace

void normalize_batch_cuda(const std::uint8_t* nhwc_device, std::size_t count, ImageShape shape,
                          const NormalizeParams& params, void* out_device, cudaStream_t stream) {
  if (count == 0) return;
  if (!nhwc_device || !out_device || shape.empty())
    throw InvalidArgument("normalize_batch_cuda: empty input");
  if (shape.channels > 4)
    throw InvalidArgument("normalize_batch_cuda: " + std::to_string(shape.channels) +
                          " channels; 1 to 4 are supported");
  Affine a{};
  for (int c = 0; c < shape.channels; ++c) {
    if (!(params.std[c] != 0.f) || !std::isfinite(params.std[c]))
      throw InvalidArgument("normalize_batch_cuda: std of channel " + std::to_string(c) +
                            " must be finite and non-zero");
    a.scale[c] = 1.f / params.std[c];
    a.bias[c] = -params.mean[c] * a.scale[c];
  }
  const std::size_t image_elems = shape.bytes(), total = image_elems * count;
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  switch (params.type) {
    case ElementType::float32:
      launch_layout<float>(params.layout, nhwc_device, total, shape.channels, image_elems, plane, a,
                           out_device, stream);
      break;
    case ElementType::float16:
      launch_layout<__half>(params.layout, nhwc_device, total, shape.channels, image_elems, plane, a,
                            out_device, stream);
      break;
    case ElementType::bfloat16:
      launch_layout<__nv_bfloat16>(params.layout, nhwc_device, total, shape.channels, image_elems, plane, a,
                                   out_device, stream);
      break;
  }
}

}  // namespace conveyor::ops
