// normalize: 8-bit HWC pixels to floating point, (pixel - mean[c]) / std[c] per channel, as float32,
// float16 or bfloat16, in CHW or HWC order, on one image or a batch on the CPU. Its GPU twin, for a
// batch already on the device (only bytes cross the bus), is conveyor/cuda/normalize.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "conveyor/image.h"

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
void normalize_batch(const std::uint8_t* nhwc, std::size_t count, ImageShape shape,
                     const NormalizeParams& params, void* out);

}  // namespace conveyor::ops
