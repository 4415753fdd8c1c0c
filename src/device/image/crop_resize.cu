// One thread per output pixel; blockIdx.y is the job. The window's scales are computed once per block.
#include <algorithm>
#include <string>

#include "conveyor/error.h"
#include "src/device/cuda_check.h"
#include "src/device/image/crop_resize.h"
#include "src/device/image/linear_resize_math.h"

namespace conveyor::cuda {
namespace {

constexpr int kThreads = 256;

template <int C>
__global__ void crop_resize_kernel(const CropResizeJob* __restrict__ jobs, DeviceSlots out) {
  const CropResizeJob job = jobs[blockIdx.y];  // the same address for the whole block: one broadcast read
  __shared__ double scale_x, scale_y;
  if (threadIdx.x == 0) {
    scale_x = linear_scale(job.width, out.shape.width);
    scale_y = linear_scale(job.height, out.shape.height);
  }
  __syncthreads();
  const int pixels = out.shape.width * out.shape.height;
  for (int pixel = blockIdx.x * blockDim.x + threadIdx.x; pixel < pixels; pixel += gridDim.x * blockDim.x) {
    const int y = pixel / out.shape.width, x = pixel - y * out.shape.width;
    const LinearTap tx = horizontal_tap(x, scale_x, job.width);
    const LinearTap ty = vertical_tap(y, scale_y, job.height);
    const std::uint8_t* window =
        job.source + static_cast<std::size_t>(job.y) * job.source_pitch + static_cast<std::size_t>(job.x) * C;
    const std::uint8_t* top = window + static_cast<std::size_t>(ty.first) * job.source_pitch;
    const std::uint8_t* bottom = window + static_cast<std::size_t>(ty.second) * job.source_pitch;
    std::uint8_t* target = out.data + static_cast<std::size_t>(job.slot) * out.image_stride +
                           static_cast<std::size_t>(y) * out.row_pitch + static_cast<std::size_t>(x) * C;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int first = tx.first * C + c, second = tx.second * C + c;
      target[c] = static_cast<std::uint8_t>(
          linear_blend(top[first], top[second], bottom[first], bottom[second], tx, ty));
    }
  }
}

}  // namespace

void crop_resize_linear(const CropResizeJob* jobs, std::size_t count, const DeviceSlots& out,
                        cudaStream_t stream, int blocks_per_image) {
  if (count == 0) return;
  if (jobs == nullptr || out.data == nullptr || out.shape.empty())
    throw InvalidArgument("crop_resize_linear: no jobs or no output");
  if (out.shape.channels != 1 && out.shape.channels != 3)
    throw InvalidArgument("crop_resize_linear: 1 or 3 channels, not " + std::to_string(out.shape.channels));
  const std::size_t row = static_cast<std::size_t>(out.shape.width) * out.shape.channels;
  if (out.row_pitch < row || out.image_stride < out.row_pitch * static_cast<std::size_t>(out.shape.height))
    throw InvalidArgument("crop_resize_linear: row pitch or image stride smaller than the image");
  if (count > 65535) throw InvalidArgument("crop_resize_linear: at most 65535 jobs per call");
  const int pixels = out.shape.width * out.shape.height;
  int per_image = (pixels + kThreads - 1) / kThreads;
  if (blocks_per_image > 0) per_image = std::min(per_image, blocks_per_image);
  const dim3 grid(static_cast<unsigned>(per_image), static_cast<unsigned>(count));
  if (out.shape.channels == 3)
    crop_resize_kernel<3><<<grid, kThreads, 0, stream>>>(jobs, out);
  else
    crop_resize_kernel<1><<<grid, kThreads, 0, stream>>>(jobs, out);
  CONVEYOR_CUDA(cudaGetLastError(), "crop_resize_linear");
}

}  // namespace conveyor::cuda
