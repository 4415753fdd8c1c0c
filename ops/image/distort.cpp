#include "conveyor/ops/distort.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "conveyor/error.h"
#include "ops/image/distort_kernels.h"

namespace conveyor::ops {
namespace {

// Larger factors are refused: values must stay within int range on their way through the kernels.
constexpr double kMaxFactor = 1000;

// Rotation by `turns` of the chroma plane (I, Q) of YIQ, as one RGB-to-RGB matrix. Y (luma) is kept.
void hue_matrix(double turns, float* out) {
  static constexpr double kToYiq[9] = {0.299,    0.587,     0.114,      //
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
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      rotated[3 * i + j] = rotate[3 * i] * a[j] + rotate[3 * i + 1] * a[3 + j] + rotate[3 * i + 2] * a[6 + j];
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      out[3 * i + j] =
          static_cast<float>(from_yiq[3 * i] * rotated[j] + from_yiq[3 * i + 1] * rotated[3 + j] +
                             from_yiq[3 * i + 2] * rotated[6 + j]);
}

void check_options(const DistortOptions& options) {
  for (const double spread : {options.brightness, options.contrast, options.saturation}) {
    if (!(spread >= 0 && spread < kMaxFactor))
      throw InvalidArgument("distort: brightness, contrast and saturation must be in [0, 1000)");
  }
  if (!(options.hue >= 0 && options.hue <= 0.5)) throw InvalidArgument("distort: hue must be in [0, 0.5]");
}

}  // namespace

ColorJitter draw_color_jitter(const DistortOptions& options, Rng& rng) {
  check_options(options);
  ColorJitter jitter;
  for (int i = 3; i > 0; --i)
    std::swap(jitter.order[i], jitter.order[rng.below(static_cast<std::uint64_t>(i) + 1)]);
  const auto factor = [&](double spread) { return rng.uniform(std::max(0.0, 1.0 - spread), 1.0 + spread); };
  if (options.brightness > 0) jitter.brightness = factor(options.brightness);
  if (options.contrast > 0) jitter.contrast = factor(options.contrast);
  if (options.saturation > 0) jitter.saturation = factor(options.saturation);
  if (options.hue > 0) jitter.hue = rng.uniform(-options.hue, options.hue);
  return jitter;
}

namespace detail {

ColorPlan plan_color(const ColorJitter& jitter, int channels) {
  for (const double factor : {jitter.brightness, jitter.contrast, jitter.saturation}) {
    if (!(factor >= 0 && factor <= kMaxFactor))
      throw InvalidArgument("distort: factors must be in [0, 1000]");
  }
  const bool color = channels == 3;
  ColorPlan plan;
  ColorPass* pass = &plan.passes[0];
  for (const ColorAdjustment what : jitter.order) {
    double factor = 1;
    switch (what) {
      case ColorAdjustment::brightness:
        factor = jitter.brightness;
        break;
      case ColorAdjustment::contrast:
        factor = jitter.contrast;
        break;
      case ColorAdjustment::saturation:
        factor = color ? jitter.saturation : 1.0;
        break;
      case ColorAdjustment::hue:
        factor = color && jitter.hue != 0 ? 0.0 : 1.0;
        break;  // 0: "in use"
    }
    if (factor == 1.0) continue;
    if (what == ColorAdjustment::contrast) {
      plan.has_contrast = true;
      pass = &plan.passes[1];
    }
    if (what == ColorAdjustment::hue) hue_matrix(jitter.hue, pass->hue);
    pass->steps[pass->count++] = {what, static_cast<float>(factor)};
  }
  return plan;
}

}  // namespace detail

void distort(ImageView image, const ColorJitter& jitter) {
  if (image.empty()) throw InvalidArgument("distort: empty image");
  if (image.channels != 1 && image.channels != 3)
    throw InvalidArgument("distort: 1 or 3 channels, not " + std::to_string(image.channels));
  detail::ColorPlan plan = detail::plan_color(jitter, image.channels);
  const auto run = [&image](const detail::ColorPass& p, detail::ChannelSums* sums) {
    for (int y = 0; y < image.height; ++y)
      detail::apply_color_row(image.row(y), image.width, image.channels, p, sums);
  };
  if (!plan.has_contrast) {
    if (plan.passes[0].count > 0) run(plan.passes[0], nullptr);
    return;
  }
  detail::ChannelSums sums;
  run(plan.passes[0], &sums);  // with no steps: only sums
  const double pixels = static_cast<double>(image.height) * image.width;
  const double mean = image.channels == 3
                          ? (0.2989 * sums.sum[0] + 0.587 * sums.sum[1] + 0.114 * sums.sum[2]) / pixels
                          : sums.sum[0] / pixels;
  detail::ColorStep& contrast = plan.passes[1].steps[0];
  contrast.shift = static_cast<float>(mean * (1.0 - contrast.factor));
  run(plan.passes[1], nullptr);
}

void distort(ImageView image, const DistortOptions& options, Rng& rng) {
  distort(image, draw_color_jitter(options, rng));
}

}  // namespace conveyor::ops
