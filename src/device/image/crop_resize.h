// Crop + bilinear resize of a batch of uint8 HWC images on the GPU, each into its slot of a device batch:
// the GPU half of decode_random_resized_crop after nvJPEG has decoded the pixels. The arithmetic is OpenCV's
// INTER_LINEAR (linear_resize_math.h), so a window resized here equals ops::resize of the same pixels on
// the CPU, bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "conveyor/image.h"

namespace conveyor::cuda {

// uint8 HWC images on the device, one per slot: slot i (< count) starts at data + i * image_stride, rows
// row_pitch bytes apart.
struct DeviceSlots {
  std::uint8_t* data = nullptr;
  std::size_t count = 0;
  ImageShape shape;
  std::size_t image_stride = 0;
  std::size_t row_pitch = 0;
};

// One window of a decoded image (uint8 HWC, the output's channel count) to resize into one slot.
struct CropResizeJob {
  const std::uint8_t* source = nullptr;     // the decoded pixels on the device
  std::size_t source_pitch = 0;             // bytes between their rows
  int x = 0, y = 0, width = 0, height = 0;  // the window within them
  std::uint32_t slot = 0;
};

// Enqueues the resize of each of the `count` jobs (device memory) into its slot of `out` on `stream`. The
// caller guarantees each job's window lies inside its source and its slot is below out.count (the jobs are
// on the device: they are checked where they are made). At most `blocks_per_image` thread blocks per job
// when positive (the kernel loops over tiles of 8 rows), a block per tile when 0. Throws InvalidArgument on a
// bad output, DeviceError when the launch fails.
void crop_resize_linear(const CropResizeJob* jobs, std::size_t count, const DeviceSlots& out,
                        cudaStream_t stream, int blocks_per_image = 0);

}  // namespace conveyor::cuda
