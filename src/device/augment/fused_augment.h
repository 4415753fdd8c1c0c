// Flip, colour distortion and normalize of a uint8 NHWC batch on the GPU, in one pass over the pixels (plus
// one reading pass for the images whose distortion has contrast, which needs the image's mean first).
// The result equals the CPU chain ops::flip_horizontal -> ops::distort -> ops::normalize_batch bit for bit:
// the parameters come from the CPU's draws (augment_params.h), the pixel arithmetic is the CPU kernel's
// (color_math.h) and normalize is the same fused multiply-add as the CPU's.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "conveyor/image.h"
#include "conveyor/ops/normalize.h"
#include "src/device/augment/augment_params.h"

namespace conveyor::cuda {

// `count` uint8 HWC images of `shape` on the device, `image_stride` bytes apart, rows contiguous.
struct DeviceImages {
  const std::uint8_t* data = nullptr;
  std::size_t count = 0;
  ImageShape shape;
  std::size_t image_stride = 0;
};

// Enqueues the augmentation on `stream`. `params` (device memory) holds one SampleAugment per image; when
// `any_contrast`, `sums` (device memory, 3 * count values) is overwritten with the images' channel sums.
// `out` receives count images of shape.bytes() elements each, of normalize.type in normalize.layout.
// Images must have 1 or 3 channels. At most `blocks_per_image` thread blocks per image when positive (the
// kernels loop over the pixels: fewer blocks take longer and leave more of the GPU to other work); as many
// as one pass needs when 0. Throws InvalidArgument on bad arguments, DeviceError when a launch fails.
void fused_augment(const DeviceImages& in, const SampleAugment* params, bool any_contrast,
                   std::uint64_t* sums, const ops::NormalizeParams& normalize, void* out, cudaStream_t stream,
                   int blocks_per_image = 0);

}  // namespace conveyor::cuda
