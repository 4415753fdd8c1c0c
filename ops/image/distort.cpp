#include "conveyor/ops/distort.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "conveyor/error.h"

// The pixel loops below are written so that the compiler vectorizes them. Where the compiler supports
// function multiversioning on x86-64, the row kernel is also built for AVX2 and picked at load time, so
// one binary runs everywhere and uses 8-wide float math where it can.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define CONVEYOR_TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CONVEYOR_TARGET_CLONES
#endif

namespace conveyor::ops {
namespace {

// Pixels are processed in chunks of this many, held as float planes on the stack: the chunk fits in L1
// and every adjustment is a simple loop over contiguous floats.
constexpr int kChunk = 256;

struct Step {
  ColorAdjustment what;
  float factor;
};

// The adjustments to run in one pass over the image, with what they need.
struct Pass {
  Step steps[4];
  int count = 0;
  float mean = 0;     // contrast's gray mean (known before the pass starts)
  float hue[9] = {};  // the hue rotation matrix, row-major, RGB to RGB
};

struct Planes {
  float v[3][kChunk];
};

inline float clamp_255(float x) { return std::min(std::max(x, 0.0f), 255.0f); }
// x >= 0 here, so truncation is floor, and the int round trip vectorizes (cvttps2dq) where std::trunc
// would not without SSE4.1.
inline float truncate(float x) { return static_cast<float>(static_cast<int>(x)); }
// torchvision's rgb_to_grayscale weights, floored for uint8 images.
inline float gray_of(float r, float g, float b) { return truncate(0.2989f * r + 0.587f * g + 0.114f * b); }

inline void load(const std::uint8_t* src, int n, int channels, Planes& p) {
  if (channels == 1) {
    for (int i = 0; i < n; ++i) p.v[0][i] = src[i];
    return;
  }
  float* __restrict r = p.v[0];
  float* __restrict g = p.v[1];
  float* __restrict b = p.v[2];
  for (int i = 0; i < n; ++i) {
    r[i] = src[3 * i];
    g[i] = src[3 * i + 1];
    b[i] = src[3 * i + 2];
  }
}

inline void store(const Planes& p, int n, int channels, std::uint8_t* dst) {
  if (channels == 1) {
    for (int i = 0; i < n; ++i) dst[i] = static_cast<std::uint8_t>(static_cast<int>(p.v[0][i]));
    return;
  }
  const float* __restrict r = p.v[0];
  const float* __restrict g = p.v[1];
  const float* __restrict b = p.v[2];
  for (int i = 0; i < n; ++i) {
    dst[3 * i] = static_cast<std::uint8_t>(static_cast<int>(r[i]));
    dst[3 * i + 1] = static_cast<std::uint8_t>(static_cast<int>(g[i]));
    dst[3 * i + 2] = static_cast<std::uint8_t>(static_cast<int>(b[i]));
  }
}

inline double gray_sum(const Planes& p, int n, int channels) {
  float sum = 0;  // at most 256 values below 256: exact in float
  if (channels == 1) {
    for (int i = 0; i < n; ++i) sum += p.v[0][i];
  } else {
    for (int i = 0; i < n; ++i) sum += gray_of(p.v[0][i], p.v[1][i], p.v[2][i]);
  }
  return sum;
}

inline void scale_and_shift(float* __restrict x, int n, float factor, float shift) {
  for (int i = 0; i < n; ++i) x[i] = truncate(clamp_255(x[i] * factor + shift));
}

inline void saturate(Planes& p, int n, float factor) {
  float* __restrict r = p.v[0];
  float* __restrict g = p.v[1];
  float* __restrict b = p.v[2];
  const float keep = 1.0f - factor;
  for (int i = 0; i < n; ++i) {
    const float gray = gray_of(r[i], g[i], b[i]) * keep;
    r[i] = truncate(clamp_255(r[i] * factor + gray));
    g[i] = truncate(clamp_255(g[i] * factor + gray));
    b[i] = truncate(clamp_255(b[i] * factor + gray));
  }
}

inline void rotate_hue(Planes& p, int n, const float* m) {
  float* __restrict r = p.v[0];
  float* __restrict g = p.v[1];
  float* __restrict b = p.v[2];
  for (int i = 0; i < n; ++i) {
    const float r0 = r[i], g0 = g[i], b0 = b[i];
    r[i] = truncate(clamp_255(m[0] * r0 + m[1] * g0 + m[2] * b0 + 0.5f));
    g[i] = truncate(clamp_255(m[3] * r0 + m[4] * g0 + m[5] * b0 + 0.5f));
    b[i] = truncate(clamp_255(m[6] * r0 + m[7] * g0 + m[8] * b0 + 0.5f));
  }
}

// Runs `pass` over one row in place; returns the sum of the result's gray values when asked.
CONVEYOR_TARGET_CLONES double process_row(std::uint8_t* row, int width, int channels, const Pass& pass,
                                          bool sum_gray) {
  Planes planes;
  double sum = 0;
  for (int start = 0; start < width; start += kChunk) {
    const int n = std::min(kChunk, width - start);
    std::uint8_t* pixels = row + static_cast<std::ptrdiff_t>(start) * channels;
    load(pixels, n, channels, planes);
    for (int s = 0; s < pass.count; ++s) {
      const Step& step = pass.steps[s];
      switch (step.what) {
        case ColorAdjustment::brightness:
          for (int c = 0; c < channels; ++c) scale_and_shift(planes.v[c], n, step.factor, 0.0f);
          break;
        case ColorAdjustment::contrast:
          for (int c = 0; c < channels; ++c)
            scale_and_shift(planes.v[c], n, step.factor, pass.mean * (1.0f - step.factor));
          break;
        case ColorAdjustment::saturation: saturate(planes, n, step.factor); break;
        case ColorAdjustment::hue: rotate_hue(planes, n, pass.hue); break;
      }
    }
    if (pass.count > 0) store(planes, n, channels, pixels);
    if (sum_gray) sum += gray_sum(planes, n, channels);
  }
  return sum;
}

double run(ImageView image, const Pass& pass, bool sum_gray) {
  double sum = 0;
  for (int y = 0; y < image.height; ++y) sum += process_row(image.row(y), image.width, image.channels, pass, sum_gray);
  return sum;
}

// Rotation by `turns` of the chroma plane (I, Q) of YIQ, as one RGB-to-RGB matrix. Y (luma) is kept.
void hue_matrix(double turns, float* out) {
  static constexpr double kToYiq[9] = {0.299,    0.587,     0.114,     //
                                       0.595716, -0.274453, -0.321263,  //
                                       0.211456, -0.522591, 0.311135};
  // Inverse of kToYiq (closed form of the 3x3 inverse).
  const double* a = kToYiq;
  const double det = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) +
                     a[2] * (a[3] * a[7] - a[4] * a[6]);
  const double from_yiq[9] = {(a[4] * a[8] - a[5] * a[7]) / det, (a[2] * a[7] - a[1] * a[8]) / det,
                              (a[1] * a[5] - a[2] * a[4]) / det, (a[5] * a[6] - a[3] * a[8]) / det,
                              (a[0] * a[8] - a[2] * a[6]) / det, (a[2] * a[3] - a[0] * a[5]) / det,
                              (a[3] * a[7] - a[4] * a[6]) / det, (a[1] * a[6] - a[0] * a[7]) / det,
                              (a[0] * a[4] - a[1] * a[3]) / det};
  // The sign makes a positive shift turn red towards yellow and green, as HSV hue does.
  const double angle = -2 * std::numbers::pi * turns;
  const double c = std::cos(angle), s = std::sin(angle);
  const double rotate[9] = {1, 0, 0, 0, c, -s, 0, s, c};
  double rotated[9];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      rotated[3 * i + j] = rotate[3 * i] * a[j] + rotate[3 * i + 1] * a[3 + j] + rotate[3 * i + 2] * a[6 + j];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      out[3 * i + j] = static_cast<float>(from_yiq[3 * i] * rotated[j] + from_yiq[3 * i + 1] * rotated[3 + j] +
                                          from_yiq[3 * i + 2] * rotated[6 + j]);
}

void check_options(const DistortOptions& options) {
  if (!(options.brightness >= 0) || !(options.contrast >= 0) || !(options.saturation >= 0))
    throw InvalidArgument("distort: brightness, contrast and saturation must be >= 0");
  if (!(options.hue >= 0 && options.hue <= 0.5)) throw InvalidArgument("distort: hue must be in [0, 0.5]");
}

}  // namespace

ColorJitter draw_color_jitter(const DistortOptions& options, Rng& rng) {
  check_options(options);
  ColorJitter jitter;
  for (int i = 3; i > 0; --i) std::swap(jitter.order[i], jitter.order[rng.below(static_cast<std::uint64_t>(i) + 1)]);
  const auto factor = [&](double spread) { return rng.uniform(std::max(0.0, 1.0 - spread), 1.0 + spread); };
  if (options.brightness > 0) jitter.brightness = factor(options.brightness);
  if (options.contrast > 0) jitter.contrast = factor(options.contrast);
  if (options.saturation > 0) jitter.saturation = factor(options.saturation);
  if (options.hue > 0) jitter.hue = rng.uniform(-options.hue, options.hue);
  return jitter;
}

void distort(ImageView image, const ColorJitter& jitter) {
  if (image.empty()) throw InvalidArgument("distort: empty image");
  if (image.channels != 1 && image.channels != 3)
    throw InvalidArgument("distort: 1 or 3 channels, not " + std::to_string(image.channels));
  // The adjustments that change something, in order; contrast splits them into two passes because it
  // needs the gray mean of the image as the adjustments before it leave it.
  Pass before, after;
  Pass* current = &before;
  bool has_contrast = false;
  for (const ColorAdjustment what : jitter.order) {
    const bool color = image.channels == 3;
    float factor = 1;
    switch (what) {
      case ColorAdjustment::brightness: factor = static_cast<float>(jitter.brightness); break;
      case ColorAdjustment::contrast: factor = static_cast<float>(jitter.contrast); break;
      case ColorAdjustment::saturation: factor = color ? static_cast<float>(jitter.saturation) : 1.0f; break;
      case ColorAdjustment::hue: factor = color && jitter.hue != 0 ? 0.0f : 1.0f; break;
    }
    if (factor == 1.0f) continue;
    if (what == ColorAdjustment::contrast) {
      has_contrast = true;
      current = &after;
    }
    if (what == ColorAdjustment::hue) hue_matrix(jitter.hue, current->hue);
    current->steps[current->count++] = {what, factor};
  }
  if (!has_contrast) {
    run(image, before, false);
    return;
  }
  const double pixels = static_cast<double>(image.height) * image.width;
  after.mean = static_cast<float>(run(image, before, true) / pixels);
  run(image, after, false);
}

void distort(ImageView image, const DistortOptions& options, Rng& rng) {
  distort(image, draw_color_jitter(options, rng));
}

}  // namespace conveyor::ops
