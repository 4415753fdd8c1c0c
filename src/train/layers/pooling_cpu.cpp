// CPU reference pooling (max, average over a square window, global average), NHWC, and the CPU twin of
// the Pool2d layer over it.
#include "src/train/layers/pooling_cpu.h"

#include <algorithm>
#include <limits>

#include "conveyor/train/nn/reference.h"
#include "src/train/layers/cpu_parallel.h"
#include "src/train/layers/nhwc.h"

namespace conveyor::nn::cpu {
namespace {

// The window of output (oy, ox) clipped to the input: [y0, y1) x [x0, x1).
struct Window {
  int y0, y1, x0, x1;
};
Window window_of(const PoolGeometry& g, int oy, int ox) {
  const int y0 = oy * g.stride - g.pad, x0 = ox * g.stride - g.pad;
  return {std::max(y0, 0), std::min(y0 + g.window, g.input.h), std::max(x0, 0),
          std::min(x0 + g.window, g.input.w)};
}

// The backward passes' loop. Windows overlap, so one image per task (never two tasks writing the same dx):
// the image's dx is zeroed, then visit(n, oy, ox, window) adds each output pixel's gradient into it.
template <class T, class Visit>
void backward_by_image(const PoolGeometry& g, T* dx, Visit visit) {
  const Shape4 in = g.input, out = g.output();
  const std::size_t image = static_cast<std::size_t>(in.h) * in.w * in.c;
  parallel_ranges(static_cast<std::size_t>(in.n), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t nn = begin; nn < end; ++nn) {
      std::fill(dx + nn * image, dx + (nn + 1) * image, T(0));
      for (int oy = 0; oy < out.h; ++oy)
        for (int ox = 0; ox < out.w; ++ox) visit(static_cast<int>(nn), oy, ox, window_of(g, oy, ox));
    }
  });
}

}  // namespace

template <class T>
void max_pool_forward(const PoolGeometry& g, const T* x, T* y) {
  const Shape4 in = g.input, out = g.output();
  parallel_ranges(static_cast<std::size_t>(out.n) * out.h, 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      const int n = static_cast<int>(row / out.h), oy = static_cast<int>(row % out.h);
      for (int ox = 0; ox < out.w; ++ox) {
        T* yp = y + nhwc_offset(out, n, oy, ox);
        std::fill(yp, yp + in.c, -std::numeric_limits<T>::infinity());
        const Window win = window_of(g, oy, ox);
        for (int iy = win.y0; iy < win.y1; ++iy)
          for (int ix = win.x0; ix < win.x1; ++ix) {
            const T* xp = x + nhwc_offset(in, n, iy, ix);
            for (int c = 0; c < in.c; ++c) yp[c] = std::max(yp[c], xp[c]);
          }
      }
    }
  });
}

template <class T>
void max_pool_backward(const PoolGeometry& g, const T* x, const T* dy, T* dx) {
  const Shape4 in = g.input, out = g.output();
  backward_by_image(g, dx, [&](int n, int oy, int ox, const Window& win) {
    for (int c = 0; c < in.c; ++c) {
      std::size_t best = nhwc_offset(in, n, win.y0, win.x0) + c;
      for (int iy = win.y0; iy < win.y1; ++iy)
        for (int ix = win.x0; ix < win.x1; ++ix) {
          const std::size_t at = nhwc_offset(in, n, iy, ix) + c;
          if (x[at] > x[best]) best = at;
        }
      dx[best] += dy[nhwc_offset(out, n, oy, ox) + c];
    }
  });
}

template <class T>
void avg_pool_forward(const PoolGeometry& g, const T* x, T* y) {
  const Shape4 in = g.input, out = g.output();
  const T inv_area = T(1) / static_cast<T>(g.window * g.window);
  parallel_ranges(static_cast<std::size_t>(out.n) * out.h, 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      const int n = static_cast<int>(row / out.h), oy = static_cast<int>(row % out.h);
      for (int ox = 0; ox < out.w; ++ox) {
        T* yp = y + nhwc_offset(out, n, oy, ox);
        std::fill(yp, yp + in.c, T(0));
        const Window win = window_of(g, oy, ox);
        for (int iy = win.y0; iy < win.y1; ++iy)
          for (int ix = win.x0; ix < win.x1; ++ix) {
            const T* xp = x + nhwc_offset(in, n, iy, ix);
            for (int c = 0; c < in.c; ++c) yp[c] += xp[c];
          }
        for (int c = 0; c < in.c; ++c) yp[c] *= inv_area;
      }
    }
  });
}

template <class T>
void avg_pool_backward(const PoolGeometry& g, const T* dy, T* dx) {
  const Shape4 in = g.input, out = g.output();
  const T inv_area = T(1) / static_cast<T>(g.window * g.window);
  backward_by_image(g, dx, [&](int n, int oy, int ox, const Window& win) {
    const T* gp = dy + nhwc_offset(out, n, oy, ox);
    for (int iy = win.y0; iy < win.y1; ++iy)
      for (int ix = win.x0; ix < win.x1; ++ix) {
        T* dxp = dx + nhwc_offset(in, n, iy, ix);
        for (int c = 0; c < in.c; ++c) dxp[c] += gp[c] * inv_area;
      }
  });
}

template <class T>
void global_avg_pool_forward(const Shape4& s, const T* x, T* y) {
  const std::size_t pixels = static_cast<std::size_t>(s.h) * s.w;
  parallel_ranges(static_cast<std::size_t>(s.n), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t n = begin; n < end; ++n) {
      T* yp = y + n * s.c;
      std::fill(yp, yp + s.c, T(0));
      for (std::size_t p = 0; p < pixels; ++p) {
        const T* xp = x + (n * pixels + p) * s.c;
        for (int c = 0; c < s.c; ++c) yp[c] += xp[c];
      }
      for (int c = 0; c < s.c; ++c) yp[c] /= static_cast<T>(pixels);
    }
  });
}

template <class T>
void global_avg_pool_backward(const Shape4& s, const T* dy, T* dx) {
  const std::size_t pixels = static_cast<std::size_t>(s.h) * s.w;
  parallel_ranges(static_cast<std::size_t>(s.n), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t n = begin; n < end; ++n)
      for (std::size_t p = 0; p < pixels; ++p)
        for (int c = 0; c < s.c; ++c)
          dx[(n * pixels + p) * s.c + c] = dy[n * s.c + c] / static_cast<T>(pixels);
  });
}

#define CONVEYOR_INSTANTIATE(T)                                                    \
  template void max_pool_forward<T>(const PoolGeometry&, const T*, T*);            \
  template void max_pool_backward<T>(const PoolGeometry&, const T*, const T*, T*); \
  template void avg_pool_forward<T>(const PoolGeometry&, const T*, T*);            \
  template void avg_pool_backward<T>(const PoolGeometry&, const T*, T*);           \
  template void global_avg_pool_forward<T>(const Shape4&, const T*, T*);           \
  template void global_avg_pool_backward<T>(const Shape4&, const T*, T*);
CONVEYOR_INSTANTIATE(float)
CONVEYOR_INSTANTIATE(double)
#undef CONVEYOR_INSTANTIATE

}  // namespace conveyor::nn::cpu

namespace conveyor::nn {

void Pool2dCpu::forward(const Tensor& x, const Tensor& y) const {
  if (global())
    cpu::global_avg_pool_forward(geometry().input, x.as<const float>(), y.as<float>());
  else if (mode() == PoolMode::max)
    cpu::max_pool_forward(geometry(), x.as<const float>(), y.as<float>());
  else
    cpu::avg_pool_forward(geometry(), x.as<const float>(), y.as<float>());
}

void Pool2dCpu::backward(const Tensor& x, const Tensor&, const Tensor& dy, const Tensor& dx) const {
  if (global())
    cpu::global_avg_pool_backward(geometry().input, dy.as<const float>(), dx.as<float>());
  else if (mode() == PoolMode::max)
    cpu::max_pool_backward(geometry(), x.as<const float>(), dy.as<const float>(), dx.as<float>());
  else
    cpu::avg_pool_backward(geometry(), dy.as<const float>(), dx.as<float>());
}

}  // namespace conveyor::nn
