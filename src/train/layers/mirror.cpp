#include "src/train/layers/mirror.h"

#include <algorithm>

#include "src/train/layers/cpu_parallel.h"

#ifdef CONVEYOR_HAVE_CUDA
#include "src/device/cuda_check.h"
#include "src/train/layers/kernels.h"
#endif

namespace conveyor::nn {

void mirror_width(Context& ctx, const Tensor& x) {
  const Shape4 s = x.shape;
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu())
    return kernels::mirror_width(x.dtype, s.n, s.h, s.w, s.c, x.data, ctx.stream(), "mirror image");
#endif
  (void)ctx;
  float* data = x.as<float>();
  const auto rows = static_cast<std::size_t>(s.n) * static_cast<std::size_t>(s.h);
  const auto width = static_cast<std::size_t>(s.w), channels = static_cast<std::size_t>(s.c);
  cpu::parallel_ranges(rows, 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row)
      for (std::size_t x0 = 0; x0 < width / 2; ++x0) {
        float* left = data + (row * width + x0) * channels;
        float* right = data + (row * width + (width - 1 - x0)) * channels;
        std::swap_ranges(left, left + channels, right);
      }
  });
}

void copy_floats(Context& ctx, const float* from, float* to, std::size_t count) {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) {
    CONVEYOR_CUDA(cudaMemcpyAsync(to, from, count * sizeof(float), cudaMemcpyDeviceToDevice, ctx.stream()),
                  "keeping the first pass's logits");
    return;
  }
#endif
  (void)ctx;
  std::copy(from, from + count, to);
}

void average_into(Context& ctx, float* x, const float* y, std::size_t count) {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) return kernels::average_into(count, x, y, ctx.stream(), "mean of two passes' logits");
#endif
  (void)ctx;
  for (std::size_t i = 0; i < count; ++i) x[i] = 0.5f * (x[i] + y[i]);
}

}  // namespace conveyor::nn
