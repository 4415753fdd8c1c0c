// The pixel loops of distort: one pass of colour adjustments over one row, in place.
#pragma once

#include <cstdint>

#include "conveyor/ops/distort.h"

namespace conveyor::ops::detail {

struct ColorStep {
  ColorAdjustment what;
  float factor;
  float shift = 0;  // contrast: mean * (1 - factor)
};

// Adjustments applied back to back in one pass. Brightness and contrast treat every channel alike, so a
// pass of only those runs over the interleaved bytes as they are; saturation and hue need whole pixels,
// so a pass with either splits pixels into channel planes first.
struct ColorPass {
  ColorStep steps[4];
  int count = 0;
  float hue[9] = {};  // hue rotation, row-major RGB to RGB
  bool per_pixel() const noexcept {
    for (int s = 0; s < count; ++s)
      if (steps[s].what == ColorAdjustment::saturation || steps[s].what == ColorAdjustment::hue) return true;
    return false;
  }
};

// Per-channel sums of the pixels a pass leaves behind (what contrast needs the mean of).
struct ChannelSums {
  std::int64_t sum[3] = {0, 0, 0};
};

// The passes distort() runs for one draw on an image of `channels` (1 or 3) channels: the adjustments that
// change something, in order, in one pass, except that contrast needs the mean of the image as the
// adjustments before it leave it, so contrast and what follows it form a second pass. The GPU augmentation
// builds its kernel parameters from the same plan. Throws InvalidArgument on factors out of range.
struct ColorPlan {
  ColorPass passes[2];
  bool has_contrast = false;  // passes[1].steps[0] is contrast; its shift waits for the mean
};
ColorPlan plan_color(const ColorJitter& jitter, int channels);

// Applies `pass` to `width` pixels of `channels` (1 or 3) channels at `row`, in place; adds the sums of the
// result to `sums` unless it is null. A pass without steps only sums. Uses the fastest kernel the CPU runs.
void apply_color_row(std::uint8_t* row, int width, int channels, const ColorPass& pass, ChannelSums* sums);

// The same with the portable kernel only (the tests compare the two).
void apply_color_row_portable(std::uint8_t* row, int width, int channels, const ColorPass& pass,
                              ChannelSums* sums);

#if defined(__x86_64__) && defined(__GNUC__)
#define CONVEYOR_AVX2_COLOR_KERNEL 1
// RGB only, 8 pixels at a time; returns how many pixels it did (the rest is left to the portable kernel).
// Call only where the CPU has AVX2.
int apply_rgb_row_avx2(std::uint8_t* row, int width, const ColorPass& pass, ChannelSums* sums);
// Brightness and contrast on interleaved RGB values, 24 at a time; returns how many values it did.
int apply_flat_row_avx2(std::uint8_t* row, int values, const ColorPass& pass, ChannelSums* sums);
#endif

}  // namespace conveyor::ops::detail
