// normalize: 8-bit HWC pixels to floating point, (pixel - mean[c]) / std[c] per channel, as float32,
// float16 or bfloat16, in CHW or HWC order. The CPU form works on one image or a batch; the CUDA form
// works on a uint8 NHWC batch already on the GPU, so only bytes cross the bus.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "conveyor/image.h"

#ifdef CONVEYOR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace conveyor::ops {

enum class ElementType : std::uint8_t { float32, float16, bfloat16 };
// Per image: channels-first (CHW, so a batch is NCHW) or channels-last (HWC, a batch is NHWC).
enum class TensorLayout : std::uint8_t { chw, hwc };

// Bytes of one element of `type`.
std::size_t element_size(ElementType type) noexcept;

struct NormalizeParams {
  // Per channel, on the 0..255 scale of the pixels (torchvision's mean * 255). Up to 4 channels.
  std::array<float, 4> mean{0.f, 0.f, 0.f, 0.f};
  std::array<float, 4> std{1.f, 1.f, 1.f, 1.f};
  ElementType type = ElementType::float32;
  TensorLayout layout = TensorLayout::chw;
};

// Writes image.height * image.width * image.channels elements to `out` (element type and order from
// params). The image may have padded rows. Throws InvalidArgument on an empty image, more than 4
// channels or a zero std.
void normalize(ConstImageView image, const NormalizeParams& params, void* out);

// The same for `count` contiguous NHWC images of `shape`: out holds count images one after the other.
void normalize_batch(const std::uint8_t* nhwc, std::size_t count, ImageShape shape, const NormalizeParams& params,
                     void* out);

#ifdef CONVEYOR_HAVE_CUDA
// normalize_batch on the GPU, enqueued on `stream`: reads 16 bytes per thread (when the input is
// 16-byte aligned) and writes contiguous runs, so loads and stores are coalesced. Gives the same bits as
// the CPU form. Launch failures throw DeviceError.
void normalize_batch_cuda(const std::uint8_t* nhwc_device, std::size_t count, ImageShape shape,
                          const NormalizeParams& params, void* out_device, cudaStream_t stream);
#endif

}  // namespace conveyor::ops
