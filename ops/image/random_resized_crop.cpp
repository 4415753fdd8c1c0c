#include "conveyor/ops/random_resized_crop.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "conveyor/error.h"
#include "conveyor/ops/crop.h"

namespace conveyor::ops {
namespace {

void check_options(const RandomResizedCropOptions& options) {
  if (!(options.scale_min > 0 && options.scale_min <= options.scale_max))
    throw InvalidArgument("random_resized_crop: need 0 < scale_min <= scale_max");
  if (!(options.ratio_min > 0 && options.ratio_min <= options.ratio_max))
    throw InvalidArgument("random_resized_crop: need 0 < ratio_min <= ratio_max");
}

// Python's round(): to nearest, ties to even (std::nearbyint in the default rounding mode).
int round_half_even(double x) { return static_cast<int>(std::nearbyint(x)); }

// The window in the pixels of the image decoded at 1/scale, rounded to the nearest pixel and at least one.
Rect scaled_window(Rect window, int scale, ImageShape scaled) {
  const auto scale_down = [scale](int v) { return (v + scale / 2) / scale; };
  int x0 = std::min(scale_down(window.x), scaled.width - 1),
      y0 = std::min(scale_down(window.y), scaled.height - 1);
  const int x1 = std::clamp(scale_down(window.right()), x0 + 1, scaled.width);
  const int y1 = std::clamp(scale_down(window.bottom()), y0 + 1, scaled.height);
  return {x0, y0, x1 - x0, y1 - y0};
}

}  // namespace

Rect random_resized_crop_window(int height, int width, const RandomResizedCropOptions& options, Rng& rng) {
  check_options(options);
  if (height <= 0 || width <= 0) throw InvalidArgument("random_resized_crop: empty image");
  const double area = static_cast<double>(height) * width;
  const double log_ratio_min = std::log(options.ratio_min), log_ratio_max = std::log(options.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.uniform(options.scale_min, options.scale_max);
    const double ratio = std::exp(rng.uniform(log_ratio_min, log_ratio_max));
    const int w = round_half_even(std::sqrt(target_area * ratio));
    const int h = round_half_even(std::sqrt(target_area / ratio));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int y = static_cast<int>(rng.below(static_cast<std::uint64_t>(height - h) + 1));
      const int x = static_cast<int>(rng.below(static_cast<std::uint64_t>(width - w) + 1));
      return {x, y, w, h};
    }
  }
  // Fallback: the whole image, cut to the nearest allowed aspect ratio, centred.
  const double image_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (image_ratio < options.ratio_min) {
    h = std::max(1, round_half_even(w / options.ratio_min));
  } else if (image_ratio > options.ratio_max) {
    w = std::max(1, round_half_even(h * options.ratio_max));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

Rect draw_random_resized_crop_window(int height, int width, const RandomResizedCropOptions& options,
                                     std::uint64_t seed, std::uint64_t stream) {
  Rng rng(seed, stream);
  return random_resized_crop_window(height, width, options, rng);
}

void random_resized_crop(ConstImageView image, ImageView out, const RandomResizedCropOptions& options,
                         Rng& rng) {
  const Rect window = random_resized_crop_window(image.height, image.width, options, rng);
  resize(crop(image, window), out, options.interpolation);
}

DecodeResult decode_resized_window(JpegDecoder& decoder, Rect window, ImageView out,
                                   Interpolation interpolation) {
  const ImageShape full = decoder.shape(1);
  if (out.empty()) throw InvalidArgument("decode_resized_window: empty output");
  if (out.channels != full.channels) {
    throw InvalidArgument("decode_resized_window: output has " + std::to_string(out.channels) +
                          " channels, the image decodes to " + std::to_string(full.channels));
  }
  if (!window.inside(full.width, full.height))
    throw InvalidArgument("decode_resized_window: window outside the image");
  const int scale = choose_dct_scale(window.width, window.height, out.width, out.height);
  const Rect region = scale == 1 ? window : scaled_window(window, scale, decoder.shape(scale));
  if (region.width == out.width && region.height == out.height) {
    decoder.read_region(region, out, scale);  // nothing to resize: decode straight into the output
  } else {
    resize(decoder.read_region_view(region, scale), out, interpolation);
  }
  return {out.shape(), decoder.warnings(), scale, decoder.orientation()};
}

DecodeResult decode_random_resized_crop(JpegDecoder& decoder, std::span<const std::uint8_t> jpeg,
                                        ImageView out, const RandomResizedCropOptions& options, Rng& rng) {
  decoder.open(jpeg, options.decode);
  const ImageShape full = decoder.shape(1);
  const Rect window = random_resized_crop_window(full.height, full.width, options, rng);
  return decode_resized_window(decoder, window, out, options.interpolation);
}

}  // namespace conveyor::ops
