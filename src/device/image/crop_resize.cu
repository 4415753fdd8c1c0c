// blockIdx.y is the job; a block makes tiles of kRowsPerTile output rows, a thread per output column. The
// taps (two source indices and two weights each, from double arithmetic and float-to-int conversions, both
// slower on the GPU than the integer blend) are computed once per column and tile, and once per row, instead
// of twice per pixel: 31 against 55 us for a batch's windows on an H200
// (bench/results/2026-11-29-h200-feeder-kernels-and-step/).
#include <algorithm>
#include <string>

#include "conveyor/error.h"
#include "src/device/cuda_check.h"
#include "src/device/image/crop_resize.h"
#include "src/device/image/linear_resize_math.h"

namespace conveyor::cuda {
namespace {

constexpr int kMaxThreads = 256;
constexpr int kRowsPerTile = 8;

template <int C>
__global__ void crop_resize_kernel(const CropResizeJob* __restrict__ jobs, DeviceSlots out) {
  const CropResizeJob job = jobs[blockIdx.y];  // the same address for the whole block: one broadcast read
  __shared__ double scale_x, scale_y;
  __shared__ LinearTap row_taps[kRowsPerTile];
  if (threadIdx.x == 0) {
    scale_x = linear_scale(job.width, out.shape.width);
    scale_y = linear_scale(job.height, out.shape.height);
  }
  const int width = out.shape.width, height = out.shape.height;
  const std::uint8_t* window =
      job.source + static_cast<std::size_t>(job.y) * job.source_pitch + static_cast<std::size_t>(job.x) * C;
  std::uint8_t* image = out.data + static_cast<std::size_t>(job.slot) * out.image_stride;
  for (int first_row = blockIdx.x * kRowsPerTile; first_row < height; first_row += gridDim.x * kRowsPerTile) {
    const int rows = min(kRowsPerTile, height - first_row);
    __syncthreads();  // the scales are written; the last tile's row taps are read no more
    if (threadIdx.x < rows) row_taps[threadIdx.x] = vertical_tap(first_row + threadIdx.x, scale_y, job.height);
    __syncthreads();
    for (int x = threadIdx.x; x < width; x += blockDim.x) {
      const LinearTap tx = horizontal_tap(x, scale_x, job.width);
      for (int r = 0; r < rows; ++r) {
        const LinearTap& ty = row_taps[r];
        const std::uint8_t* top = window + static_cast<std::size_t>(ty.first) * job.source_pitch;
        const std::uint8_t* bottom = window + static_cast<std::size_t>(ty.second) * job.source_pitch;
        std::uint8_t* target =
            image + static_cast<std::size_t>(first_row + r) * out.row_pitch + static_cast<std::size_t>(x) * C;
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int first = tx.first * C + c, second = tx.second * C + c;
          target[c] = static_cast<std::uint8_t>(
              linear_blend(top[first], top[second], bottom[first], bottom[second], tx, ty));
        }
      }
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
  int per_image = (out.shape.height + kRowsPerTile - 1) / kRowsPerTile;  // a tile each
  if (blocks_per_image > 0) per_image = std::min(per_image, blocks_per_image);
  const dim3 grid(static_cast<unsigned>(per_image), static_cast<unsigned>(count));
  // A thread per column, in whole warps: a 224-wide image leaves no thread idle.
  const int threads = std::min(kMaxThreads, (out.shape.width + 31) / 32 * 32);
  if (out.shape.channels == 3)
    crop_resize_kernel<3><<<grid, threads, 0, stream>>>(jobs, out);
  else
    crop_resize_kernel<1><<<grid, threads, 0, stream>>>(jobs, out);
  CONVEYOR_CUDA(cudaGetLastError(), "crop_resize_linear");
}

}  // namespace conveyor::cuda
