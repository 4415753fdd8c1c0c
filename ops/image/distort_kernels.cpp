#include "ops/image/distort_kernels.h"

#include <algorithm>

// The portable kernels: loops written for the compiler to vectorize. On x86-64 with GCC they are also built
// for AVX2 and chosen when the program loads (function multiversioning). Where AVX2 is there, RGB rows go
// to the hand-written kernel instead (distort_kernels_avx2.cpp), which computes the same thing, bit for bit,
// with the pixels kept in registers.
// Not under the sanitizers: the clones' ifunc resolver runs while the program is being relocated, before
// the sanitizer runtime is up, and its instrumented code crashes there (every TSan program did at start).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define CONVEYOR_TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CONVEYOR_TARGET_CLONES
#endif

namespace conveyor::ops::detail {
namespace {

// Values per chunk: a multiple of 3 and of 24 (so chunks start on whole pixels and the channel-sum trick
// below lines up), small enough for the float copies to stay in L1.
constexpr int kFlatChunk = 768;
constexpr int kPixelChunk = 256;

// Truncation through int vectorizes (cvttps2dq) where std::trunc would not without SSE4.1; distort bounds
// the factors so that every value fits an int.
inline float truncate(float x) { return static_cast<float>(static_cast<int>(x)); }
// torchvision clamps, then truncates to uint8; truncating first gives the same for any x, and only in this
// order does GCC vectorize the pair. (a > b ? a : b) and (a < b ? a : b) map onto maxps and minps.
inline float to_8bit(float x) {
  x = truncate(x);
  x = x > 0.0f ? x : 0.0f;
  return x < 255.0f ? x : 255.0f;
}

inline void scale_and_shift(float* __restrict x, int n, float factor, float shift) {
  for (int i = 0; i < n; ++i) x[i] = to_8bit(x[i] * factor + shift);
}

inline std::int32_t sum_of(const float* __restrict x, int n) {
  std::int32_t sum = 0;  // integer, so that the reduction may be reordered (vectorized)
  for (int i = 0; i < n; ++i) sum += static_cast<std::int32_t>(x[i]);
  return sum;
}

inline void widen(const std::uint8_t* __restrict bytes, int n, float* __restrict v) {
  for (int i = 0; i < n; ++i) v[i] = bytes[i];
}

inline void narrow(const float* __restrict v, int n, std::uint8_t* __restrict bytes) {
  for (int i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(static_cast<int>(v[i]));
}

// Channel sums of interleaved RGB values: 24 accumulators (8 pixels) in the channel pattern of the data.
inline void add_rgb_sums(const float* __restrict v, int n, ChannelSums* sums) {
  std::int32_t lanes[24] = {};
  int i = 0;
  for (; i + 24 <= n; i += 24)
    for (int j = 0; j < 24; ++j) lanes[j] += static_cast<std::int32_t>(v[i + j]);
  for (; i < n; ++i) lanes[i % 3] += static_cast<std::int32_t>(v[i]);
  for (int j = 0; j < 24; ++j) sums->sum[j % 3] += lanes[j];
}

// Brightness and contrast only: the row as one run of values, no deinterleaving.
CONVEYOR_TARGET_CLONES void flat_row(std::uint8_t* row, int width, int channels, const ColorPass& pass,
                                     ChannelSums* sums) {
  float v[kFlatChunk];
  const int total = width * channels;
  for (int start = 0; start < total; start += kFlatChunk) {
    const int n = std::min(kFlatChunk, total - start);
    std::uint8_t* bytes = row + start;
    widen(bytes, n, v);
    for (int s = 0; s < pass.count; ++s) scale_and_shift(v, n, pass.steps[s].factor, pass.steps[s].shift);
    if (pass.count > 0) narrow(v, n, bytes);
    if (sums == nullptr) continue;
    if (channels == 1) {
      sums->sum[0] += sum_of(v, n);
    } else {
      add_rgb_sums(v, n, sums);
    }
  }
}

inline void saturate(float* __restrict r, float* __restrict g, float* __restrict b, int n, float factor) {
  const float keep = 1.0f - factor;
  for (int i = 0; i < n; ++i) {
    const float gray = truncate(0.2989f * r[i] + 0.587f * g[i] + 0.114f * b[i]) * keep;
    r[i] = to_8bit(r[i] * factor + gray);
    g[i] = to_8bit(g[i] * factor + gray);
    b[i] = to_8bit(b[i] * factor + gray);
  }
}

inline void rotate_hue(float* __restrict r, float* __restrict g, float* __restrict b, int n, const float* m) {
  for (int i = 0; i < n; ++i) {
    const float r0 = r[i], g0 = g[i], b0 = b[i];
    r[i] = to_8bit(m[0] * r0 + m[1] * g0 + m[2] * b0 + 0.5f);
    g[i] = to_8bit(m[3] * r0 + m[4] * g0 + m[5] * b0 + 0.5f);
    b[i] = to_8bit(m[6] * r0 + m[7] * g0 + m[8] * b0 + 0.5f);
  }
}

// (GCC honours __restrict on parameters, not on local pointers: hence these small functions.)
inline void split(const std::uint8_t* __restrict pixels, std::ptrdiff_t n, float* __restrict r,
                  float* __restrict g, float* __restrict b) {
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    r[i] = pixels[3 * i];
    g[i] = pixels[3 * i + 1];
    b[i] = pixels[3 * i + 2];
  }
}

inline void merge(const float* __restrict r, const float* __restrict g, const float* __restrict b,
                  std::ptrdiff_t n, std::uint8_t* __restrict pixels) {
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    pixels[3 * i] = static_cast<std::uint8_t>(static_cast<int>(r[i]));
    pixels[3 * i + 1] = static_cast<std::uint8_t>(static_cast<int>(g[i]));
    pixels[3 * i + 2] = static_cast<std::uint8_t>(static_cast<int>(b[i]));
  }
}

// RGB with saturation or hue: the chunk is split into three float planes, adjusted, and put back.
CONVEYOR_TARGET_CLONES void pixel_row(std::uint8_t* row, int width, const ColorPass& pass,
                                      ChannelSums* sums) {
  float planes[3][kPixelChunk];
  float* r = planes[0];
  float* g = planes[1];
  float* b = planes[2];
  for (int start = 0; start < width; start += kPixelChunk) {
    const int n = std::min(kPixelChunk, width - start);
    std::uint8_t* pixels = row + static_cast<std::ptrdiff_t>(start) * 3;
    split(pixels, n, r, g, b);
    for (int s = 0; s < pass.count; ++s) {
      const ColorStep& step = pass.steps[s];
      switch (step.what) {
        case ColorAdjustment::brightness:
        case ColorAdjustment::contrast:
          for (float* plane : {r, g, b}) scale_and_shift(plane, n, step.factor, step.shift);
          break;
        case ColorAdjustment::saturation:
          saturate(r, g, b, n, step.factor);
          break;
        case ColorAdjustment::hue:
          rotate_hue(r, g, b, n, pass.hue);
          break;
      }
    }
    merge(r, g, b, n, pixels);
    if (sums != nullptr)
      for (int c = 0; c < 3; ++c) sums->sum[c] += sum_of(planes[c], n);
  }
}

}  // namespace

void apply_color_row_portable(std::uint8_t* row, int width, int channels, const ColorPass& pass,
                              ChannelSums* sums) {
  if (channels == 3 && pass.per_pixel()) {
    pixel_row(row, width, pass, sums);
  } else {
    flat_row(row, width, channels, pass, sums);
  }
}

void apply_color_row(std::uint8_t* row, int width, int channels, const ColorPass& pass, ChannelSums* sums) {
#ifdef CONVEYOR_AVX2_COLOR_KERNEL
  if (channels == 3 && __builtin_cpu_supports("avx2")) {
    if (pass.per_pixel()) {
      const int done = apply_rgb_row_avx2(row, width, pass, sums);
      if (done < width)
        apply_color_row_portable(row + static_cast<std::ptrdiff_t>(done) * 3, width - done, 3, pass, sums);
    } else {
      const int done = apply_flat_row_avx2(row, width * 3, pass, sums);  // blocks of whole pixels
      if (done < width * 3) apply_color_row_portable(row + done, width - done / 3, 3, pass, sums);
    }
    return;
  }
#endif
  apply_color_row_portable(row, width, channels, pass, sums);
}

}  // namespace conveyor::ops::detail
