// CPU reference convolution, NHWC activations and KRSC filters, and the CPU twin of the Conv2d layer over
// it. Each loop nest keeps a contiguous channel run innermost so the compiler vectorises it without
// reassociating any sum.
#include "src/train/layers/conv2d_cpu.h"

#include <algorithm>
#include <vector>

#include "conveyor/train/nn/reference.h"
#include "src/train/layers/cpu_parallel.h"
#include "src/train/layers/nhwc.h"

namespace conveyor::nn::cpu {

namespace {
// Calls tap(r, s, iy, ix) for each filter tap (r, s) of output pixel (oy, ox) that lands inside the input, at
// input pixel (iy, ix): the window walk every pass shares (inlined, so the loops vectorise as before).
template <class Tap>
inline void for_each_tap(const ConvGeometry& g, int oy, int ox, Tap&& tap) {
  for (int r = 0; r < g.kernel; ++r) {
    const int iy = oy * g.stride - g.pad + r;
    if (iy < 0 || iy >= g.input.h) continue;
    for (int s = 0; s < g.kernel; ++s) {
      const int ix = ox * g.stride - g.pad + s;
      if (ix < 0 || ix >= g.input.w) continue;
      tap(r, s, iy, ix);
    }
  }
}
}  // namespace

template <class T>
void conv2d_forward(const ConvGeometry& g, const T* x, const T* w, T* y) {
  const Shape4 in = g.input, out = g.output();
  const int K = g.out_channels, C = in.c, R = g.kernel;
  // Filters transposed to R x S x C x K: the innermost loop then runs over contiguous output channels.
  std::vector<T> wt(g.weight_count());
  for (int k = 0; k < K; ++k)
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < R; ++s)
        for (int c = 0; c < C; ++c)
          wt[((static_cast<std::size_t>(r) * R + s) * C + c) * K + k] =
              w[((static_cast<std::size_t>(k) * R + r) * R + s) * C + c];
  parallel_ranges(static_cast<std::size_t>(out.n) * out.h, 1, [&](std::size_t begin, std::size_t end) {
    std::vector<T> acc(K);
    for (std::size_t row = begin; row < end; ++row) {
      const int n = static_cast<int>(row / out.h), oy = static_cast<int>(row % out.h);
      for (int ox = 0; ox < out.w; ++ox) {
        std::fill(acc.begin(), acc.end(), T(0));
        for_each_tap(g, oy, ox, [&](int r, int s, int iy, int ix) {
          const T* xp = x + nhwc_offset(in, n, iy, ix);
          const T* wp = wt.data() + (static_cast<std::size_t>(r) * R + s) * C * K;
          for (int c = 0; c < C; ++c) {
            const T xv = xp[c];
            const T* wk = wp + static_cast<std::size_t>(c) * K;
            for (int k = 0; k < K; ++k) acc[k] += xv * wk[k];
          }
        });
        std::copy(acc.begin(), acc.end(), y + nhwc_offset(out, n, oy, ox));
      }
    }
  });
}

template <class T>
void conv2d_backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx, bool accumulate) {
  const Shape4 in = g.input, out = g.output();
  const int K = g.out_channels, C = in.c, R = g.kernel;
  const std::size_t image = static_cast<std::size_t>(in.h) * in.w * C;
  // One image per task: the scatter into dx never crosses images, so tasks never share an output.
  parallel_ranges(static_cast<std::size_t>(in.n), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t nn = begin; nn < end; ++nn) {
      const int n = static_cast<int>(nn);
      if (!accumulate) std::fill(dx + nn * image, dx + (nn + 1) * image, T(0));
      for (int oy = 0; oy < out.h; ++oy)
        for (int ox = 0; ox < out.w; ++ox) {
          const T* gp = dy + nhwc_offset(out, n, oy, ox);
          for_each_tap(g, oy, ox, [&](int r, int s, int iy, int ix) {
            T* dxp = dx + nhwc_offset(in, n, iy, ix);
            for (int k = 0; k < K; ++k) {
              const T gk = gp[k];
              if (gk == T(0)) continue;
              const T* wp = w + ((static_cast<std::size_t>(k) * R + r) * R + s) * C;
              for (int c = 0; c < C; ++c) dxp[c] += gk * wp[c];
            }
          });
        }
    }
  });
}

template <class T>
void conv2d_backward_filter(const ConvGeometry& g, const T* x, const T* dy, T* dw) {
  const Shape4 in = g.input, out = g.output();
  const int K = g.out_channels, C = in.c, R = g.kernel;
  const std::size_t filter = static_cast<std::size_t>(R) * R * C;
  // One output channel per task: each task owns its K-slice of dw and reads all of x.
  parallel_ranges(static_cast<std::size_t>(K), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t kk = begin; kk < end; ++kk) {
      T* dwk = dw + kk * filter;
      std::fill(dwk, dwk + filter, T(0));
      for (int n = 0; n < out.n; ++n)
        for (int oy = 0; oy < out.h; ++oy)
          for (int ox = 0; ox < out.w; ++ox) {
            const T gk = dy[nhwc_offset(out, n, oy, ox) + kk];
            if (gk == T(0)) continue;
            for_each_tap(g, oy, ox, [&](int r, int s, int iy, int ix) {
              const T* xp = x + nhwc_offset(in, n, iy, ix);
              T* dwp = dwk + (static_cast<std::size_t>(r) * R + s) * C;
              for (int c = 0; c < C; ++c) dwp[c] += gk * xp[c];
            });
          }
    }
  });
}

#define CONVEYOR_INSTANTIATE(T)                                                             \
  template void conv2d_forward<T>(const ConvGeometry&, const T*, const T*, T*);             \
  template void conv2d_backward_data<T>(const ConvGeometry&, const T*, const T*, T*, bool); \
  template void conv2d_backward_filter<T>(const ConvGeometry&, const T*, const T*, T*);
CONVEYOR_INSTANTIATE(float)
CONVEYOR_INSTANTIATE(double)
#undef CONVEYOR_INSTANTIATE

}  // namespace conveyor::nn::cpu

namespace conveyor::nn {

void Conv2dCpu::forward(const Tensor& x, const void* w, const Tensor& y) const {
  cpu::conv2d_forward(geometry(), x.as<const float>(), static_cast<const float*>(w), y.as<float>());
}

void Conv2dCpu::run_backward_data(const Tensor& dy, const void* w, const Tensor& dx, bool accumulate) const {
  cpu::conv2d_backward_data(geometry(), dy.as<const float>(), static_cast<const float*>(w), dx.as<float>(),
                            accumulate);
}

void Conv2dCpu::backward_filter(const Tensor& x, const Tensor& dy, void* dw) const {
  cpu::conv2d_backward_filter(geometry(), x.as<const float>(), dy.as<const float>(), static_cast<float*>(dw));
}

}  // namespace conveyor::nn
