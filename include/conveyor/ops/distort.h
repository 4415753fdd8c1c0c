// Colour distortion as torchvision's ColorJitter: brightness, contrast, saturation and hue, each with a
// random factor, applied in a random order, on 8-bit pixels in place.
//
// What each adjustment does to the image as it stands at its turn (x: a channel value, all in float and
// truncated back to 8 bits after every adjustment, as torchvision does on uint8 tensors):
//   brightness f:  x * f
//   contrast f:    x * f + m * (1 - f), m = mean over the image of floor(0.2989 R + 0.587 G + 0.114 B)
//   saturation f:  x * f + l * (1 - f), l = floor(0.2989 R + 0.587 G + 0.114 B) of the same pixel
//   hue h:         rotates the pixel's chroma by h turns around the gray axis (YIQ rotation, one 3x3
//                  matrix); torchvision goes through HSV instead, which costs far more on 8 bits.
// each result clamped to [0, 255]. Gray images: brightness and contrast as above, saturation and hue do
// nothing. The whole jitter runs in one or two passes over the pixels (two when a contrast follows
// another adjustment, whose result it needs the mean of).
#pragma once

#include <array>
#include <cstdint>

#include "conveyor/image.h"
#include "conveyor/random.h"

namespace conveyor::ops {

// How far each adjustment may go: factors are drawn from [max(0, 1 - b), 1 + b] for brightness, contrast
// and saturation, and the hue shift from [-hue, hue] turns (hue <= 0.5). 0 leaves an adjustment out.
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
