// Colour distortion as torchvision's ColorJitter: brightness, contrast, saturation and hue, each with a
// random factor, applied in a random order, on 8-bit pixels in place.
//
// What each adjustment does to the image as it stands at its turn (x: a channel value; every result is
// clamped to [0, 255] and truncated to 8 bits, as torchvision does on uint8 tensors):
//   brightness f:  x * f
//   contrast f:    x * f + m * (1 - f), m = 0.2989 mean(R) + 0.587 mean(G) + 0.114 mean(B) of the image
//                  (torchvision floors each pixel's gray value before the mean: m is about half a level
//                  higher here, which moves results by at most half a level)
//   saturation f:  x * f + l * (1 - f), l = floor(0.2989 R + 0.587 G + 0.114 B) of the same pixel
//   hue h:         rotates the pixel's chroma by h turns around the gray axis (YIQ rotation, one 3x3
//                  matrix); torchvision goes through HSV instead, which costs far more on 8 bits.
// Gray images: brightness and contrast as above (m: the mean value), saturation and hue do nothing.
// Cost: one pass over the pixels, two when contrast follows another adjustment (it needs the mean of that
// one's result, which the first pass sums on its way); a pass of brightness and contrast alone runs on the
// interleaved bytes as they are.
#pragma once

#include <array>
#include <cstdint>

#include "conveyor/image.h"
#include "conveyor/random.h"

namespace conveyor::ops {

// How far each adjustment may go: factors are drawn uniformly from [max(0, 1 - b), 1 + b] for brightness,
// contrast and saturation, and the hue shift uniformly from [-hue, hue] turns (hue <= 0.5), as torchvision's
// ColorJitter draws them. 0 leaves an adjustment out.
struct DistortOptions {
  double brightness = 0;
  double contrast = 0;
  double saturation = 0;
  double hue = 0;
};

enum class ColorAdjustment : std::uint8_t { brightness, contrast, saturation, hue };

// One draw: the order of the adjustments and their factors (1, or 0 for hue, means unchanged).
struct ColorJitter {
  std::array<ColorAdjustment, 4> order = {ColorAdjustment::brightness, ColorAdjustment::contrast,
                                          ColorAdjustment::saturation, ColorAdjustment::hue};
  double brightness = 1;
  double contrast = 1;
  double saturation = 1;
  double hue = 0;
};

// Draws the order (a uniform permutation) and the factors, as ColorJitter.get_params does.
ColorJitter draw_color_jitter(const DistortOptions& options, Rng& rng);

// Applies one draw to `image` (1 or 3 channels) in place.
void distort(ImageView image, const ColorJitter& jitter);

// Draws and applies.
void distort(ImageView image, const DistortOptions& options, Rng& rng);

}  // namespace conveyor::ops
