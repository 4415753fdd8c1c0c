// The fused augmentation kernels. Blocks are laid out per image (blockIdx.y is the image), so each block
// copies its image's parameters into shared memory once and, for contrast, turns the image's channel sums
// into the contrast shift once.
//
// Two kernels: channel_sums (only when some image has contrast) applies the first pass of each such image
// and adds up the channels, the way the CPU's first pass sums on its way; augment then applies both passes,
// the flip (by reading the mirrored column) and normalize, and writes the model's layout and type.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "conveyor/error.h"
#include "src/device/augment/color_math.h"
#include "src/device/augment/fused_augment.h"
#include "src/device/cuda_check.h"
#include "src/device/float_convert.cuh"

namespace conveyor::cuda {
namespace {

using ::conveyor::detail::from_float;

constexpr int kThreads = 256;
constexpr int kPixelsPerThread = 4;

static_assert(std::is_trivially_copyable_v<SampleAugment>, "SampleAugment is copied to the device as bytes");
static_assert(sizeof(SampleAugment) % sizeof(std::uint32_t) == 0, "copied in 32-bit words");
constexpr int kParamWords = sizeof(SampleAugment) / sizeof(std::uint32_t);

// (pixel - mean) / std as one fused multiply-add with 1 / std and -mean / std, as ops::normalize does.
struct Affine {
  float scale[4];
  float bias[4];
};

// Raw shared storage: SampleAugment has default member initialisers, which __shared__ variables may not.
struct SharedParams {
  alignas(16) std::uint32_t words[kParamWords];
  __device__ SampleAugment& get() { return *reinterpret_cast<SampleAugment*>(words); }
};

__device__ void load_params(const SampleAugment* params, int image, SharedParams& shared) {
  const auto* source = reinterpret_cast<const std::uint32_t*>(params + image);
  for (int i = threadIdx.x; i < kParamWords; i += blockDim.x) shared.words[i] = source[i];
}

template <int C>
__device__ __forceinline__ void read_pixel(const std::uint8_t* image, int width, int pixel, bool flip,
                                           float* v) {
  const int y = pixel / width;
  int x = pixel - y * width;
  if (flip) x = width - 1 - x;
  const std::uint8_t* p = image + (static_cast<std::size_t>(y) * width + x) * C;
#pragma unroll
  for (int c = 0; c < C; ++c) v[c] = p[c];
}

template <int C>
__global__ void channel_sums_kernel(const std::uint8_t* __restrict__ data, std::size_t image_stride,
                                    int width, int pixels, const SampleAugment* __restrict__ params,
                                    unsigned long long* __restrict__ sums) {
  __shared__ SharedParams shared;
  __shared__ unsigned long long block_sums[C];
  const int image = blockIdx.y;
  load_params(params, image, shared);
  if (threadIdx.x < C) block_sums[threadIdx.x] = 0;
  __syncthreads();
  const ops::detail::ColorPlan& plan = shared.get().color;
  if (!plan.has_contrast) return;  // the whole block leaves together
  const std::uint8_t* pixels_of_image = data + image * image_stride;
  unsigned int local[C] = {};
  for (int pixel = blockIdx.x * blockDim.x + threadIdx.x; pixel < pixels; pixel += gridDim.x * blockDim.x) {
    float v[C];
    read_pixel<C>(pixels_of_image, width, pixel, false, v);  // a sum does not care about the flip
    color::apply_pass<C>(plan.passes[0], v);
#pragma unroll
    for (int c = 0; c < C; ++c) local[c] += static_cast<unsigned int>(v[c]);
  }
#pragma unroll
  for (int c = 0; c < C; ++c) {
    unsigned int value = local[c];
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(&block_sums[c], static_cast<unsigned long long>(value));
  }
  __syncthreads();
  if (threadIdx.x < C) atomicAdd(&sums[image * 3 + threadIdx.x], block_sums[threadIdx.x]);
}

template <int C, class Out, bool Nchw>
__global__ void augment_kernel(const std::uint8_t* __restrict__ data, std::size_t image_stride, int width,
                               int pixels, const SampleAugment* __restrict__ params,
                               const unsigned long long* __restrict__ sums, Affine affine,
                               Out* __restrict__ out) {
  __shared__ SharedParams shared;
  const int image = blockIdx.y;
  load_params(params, image, shared);
  __syncthreads();
  if (threadIdx.x == 0 && shared.get().color.has_contrast) {
    ops::detail::ColorStep& contrast = shared.get().color.passes[1].steps[0];
    const std::uint64_t image_sums[3] = {sums[image * 3], sums[image * 3 + 1], sums[image * 3 + 2]};
    contrast.shift = color::contrast_shift(image_sums, static_cast<double>(pixels), C, contrast.factor);
  }
  __syncthreads();
  const SampleAugment& p = shared.get();
  const bool flip = p.flip != 0;
  const std::uint8_t* pixels_of_image = data + image * image_stride;
  const std::size_t first_out = static_cast<std::size_t>(image) * pixels * C;
  for (int pixel = blockIdx.x * blockDim.x + threadIdx.x; pixel < pixels; pixel += gridDim.x * blockDim.x) {
    float v[C];
    read_pixel<C>(pixels_of_image, width, pixel, flip, v);
    color::apply_pass<C>(p.color.passes[0], v);
    color::apply_pass<C>(p.color.passes[1], v);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const std::size_t at = Nchw ? first_out + static_cast<std::size_t>(c) * pixels + pixel
                                  : first_out + static_cast<std::size_t>(pixel) * C + c;
      out[at] = from_float<Out>(fmaf(v[c], affine.scale[c], affine.bias[c]));
    }
  }
}

template <int C, class Out, bool Nchw>
void launch_augment(const DeviceImages& in, const SampleAugment* params, const std::uint64_t* sums,
                    const Affine& affine, void* out, dim3 grid, cudaStream_t stream) {
  augment_kernel<C, Out, Nchw><<<grid, kThreads, 0, stream>>>(
      in.data, in.image_stride, in.shape.width, in.shape.height * in.shape.width, params,
      reinterpret_cast<const unsigned long long*>(sums), affine, static_cast<Out*>(out));
}

template <int C, class Out>
void launch_layout(const DeviceImages& in, const SampleAugment* params, const std::uint64_t* sums,
                   const Affine& affine, ops::TensorLayout layout, void* out, dim3 grid,
                   cudaStream_t stream) {
  if (layout == ops::TensorLayout::chw)
    launch_augment<C, Out, true>(in, params, sums, affine, out, grid, stream);
  else
    launch_augment<C, Out, false>(in, params, sums, affine, out, grid, stream);
}

template <int C>
void launch_channels(const DeviceImages& in, const SampleAugment* params, bool any_contrast,
                     std::uint64_t* sums, const ops::NormalizeParams& normalize, const Affine& affine,
                     void* out, cudaStream_t stream, int blocks_per_image) {
  const int pixels = in.shape.height * in.shape.width;
  int per_image = std::max(1, (pixels + kThreads * kPixelsPerThread - 1) / (kThreads * kPixelsPerThread));
  if (blocks_per_image > 0) per_image = std::min(per_image, blocks_per_image);
  const dim3 grid(static_cast<unsigned>(per_image), static_cast<unsigned>(in.count));
  if (any_contrast) {
    CONVEYOR_CUDA(cudaMemsetAsync(sums, 0, in.count * 3 * sizeof(std::uint64_t), stream), "fused_augment");
    channel_sums_kernel<C><<<grid, kThreads, 0, stream>>>(in.data, in.image_stride, in.shape.width, pixels,
                                                          params,
                                                          reinterpret_cast<unsigned long long*>(sums));
    CONVEYOR_CUDA(cudaGetLastError(), "fused_augment: channel sums");
  }
  switch (normalize.type) {
    case ops::ElementType::float32:
      launch_layout<C, float>(in, params, sums, affine, normalize.layout, out, grid, stream);
      break;
    case ops::ElementType::float16:
      launch_layout<C, __half>(in, params, sums, affine, normalize.layout, out, grid, stream);
      break;
    case ops::ElementType::bfloat16:
      launch_layout<C, __nv_bfloat16>(in, params, sums, affine, normalize.layout, out, grid, stream);
      break;
  }
  CONVEYOR_CUDA(cudaGetLastError(), "fused_augment");
}

}  // namespace

void fused_augment(const DeviceImages& in, const SampleAugment* params, bool any_contrast,
                   std::uint64_t* sums, const ops::NormalizeParams& normalize, void* out, cudaStream_t stream,
                   int blocks_per_image) {
  if (in.count == 0) return;
  if (in.data == nullptr || params == nullptr || out == nullptr || in.shape.empty())
    throw InvalidArgument("fused_augment: empty input, parameters or output");
  if (any_contrast && sums == nullptr) throw InvalidArgument("fused_augment: contrast needs the sums buffer");
  if (in.shape.channels != 1 && in.shape.channels != 3)
    throw InvalidArgument("fused_augment: 1 or 3 channels, not " + std::to_string(in.shape.channels));
  if (in.image_stride < in.shape.bytes())
    throw InvalidArgument("fused_augment: image stride " + std::to_string(in.image_stride) +
                          " is less than an image (" + std::to_string(in.shape.bytes()) + " bytes)");
  if (in.count > 65535) throw InvalidArgument("fused_augment: at most 65535 images per call");
  Affine affine{};
  for (int c = 0; c < in.shape.channels; ++c) {
    if (!(normalize.std[c] != 0.f) || !std::isfinite(normalize.std[c]))
      throw InvalidArgument("fused_augment: std of channel " + std::to_string(c) +
                            " must be finite and non-zero");
    affine.scale[c] = 1.f / normalize.std[c];
    affine.bias[c] = -normalize.mean[c] * affine.scale[c];
  }
  if (in.shape.channels == 3)
    launch_channels<3>(in, params, any_contrast, sums, normalize, affine, out, stream, blocks_per_image);
  else
    launch_channels<1>(in, params, any_contrast, sums, normalize, affine, out, stream, blocks_per_image);
}

}  // namespace conveyor::cuda
