// The per-pixel arithmetic of ops::distort (ops/image/distort_kernels.cpp), written once for the fused GPU
// kernel and for the CPU test that proves it gives distort's bytes. Every operation is the CPU kernel's, in
// its order, unfused (exact_arith.h): values stay whole numbers in float between steps (each step ends by
// truncating and clamping to 0..255), so the results are the same bit for bit.
#pragma once

#include <cstdint>

#include "ops/image/distort_kernels.h"
#include "src/device/exact_arith.h"

namespace conveyor::cuda::color {

// Truncation towards zero through int, clamped to [0, 255] (distort bounds factors so values fit an int).
CONVEYOR_HOST_DEVICE float truncate(float x) { return static_cast<float>(static_cast<int>(x)); }
CONVEYOR_HOST_DEVICE float to_8bit(float x) {
  x = truncate(x);
  x = x > 0.0f ? x : 0.0f;
  return x < 255.0f ? x : 255.0f;
}

CONVEYOR_HOST_DEVICE float scale_and_shift(float x, float factor, float shift) {
  return to_8bit(exact::add(exact::mul(x, factor), shift));
}

// Applies the steps of `pass` to one pixel of C (1 or 3) channels in v. A one-channel plan holds only
// brightness and contrast steps (plan_color leaves saturation and hue out for gray images).
template <int C>
CONVEYOR_HOST_DEVICE void apply_pass(const ops::detail::ColorPass& pass, float* v) {
  static_assert(C == 1 || C == 3, "distort works on gray or RGB pixels");
  for (int s = 0; s < pass.count; ++s) {
    const ops::detail::ColorStep& step = pass.steps[s];
    if (step.what == ops::ColorAdjustment::brightness || step.what == ops::ColorAdjustment::contrast) {
      for (int c = 0; c < C; ++c) v[c] = scale_and_shift(v[c], step.factor, step.shift);
    } else if constexpr (C == 3) {
      if (step.what == ops::ColorAdjustment::saturation) {
        const float keep = exact::sub(1.0f, step.factor);
        const float luma = exact::add(exact::add(exact::mul(0.2989f, v[0]), exact::mul(0.587f, v[1])),
                                      exact::mul(0.114f, v[2]));
        const float gray = exact::mul(truncate(luma), keep);
        for (int c = 0; c < 3; ++c) v[c] = to_8bit(exact::add(exact::mul(v[c], step.factor), gray));
      } else {  // hue: the rotation matrix of the pass, rows for R, G and B
        const float* m = pass.hue;
        const float r = v[0], g = v[1], b = v[2];
        for (int c = 0, row = 0; c < 3; ++c, row += 3) {
          v[c] = to_8bit(exact::add(exact::add(exact::add(exact::mul(m[row], r), exact::mul(m[row + 1], g)),
                                               exact::mul(m[row + 2], b)),
                                    0.5f));
        }
      }
    }
  }
}

// The shift of a contrast step from the channel sums of the image as the first pass leaves it:
// mean * (1 - factor), the mean being the luma-weighted mean of the channels (or the plain mean of one).
CONVEYOR_HOST_DEVICE float contrast_shift(const std::uint64_t* sums, double pixels, int channels,
                                          float factor) {
  double mean = 0;
  if (channels == 3) {
    const double weighted = exact::add(exact::add(exact::mul(0.2989, static_cast<double>(sums[0])),
                                                  exact::mul(0.587, static_cast<double>(sums[1]))),
                                       exact::mul(0.114, static_cast<double>(sums[2])));
    mean = exact::div(weighted, pixels);
  } else {
    mean = exact::div(static_cast<double>(sums[0]), pixels);
  }
  return static_cast<float>(exact::mul(mean, exact::sub(1.0, static_cast<double>(factor))));
}

}  // namespace conveyor::cuda::color
