// ops::random_resized_crop, the op on decoded pixels that issue 35 added: its windows follow torchvision's
// RandomResizedCrop distribution. The window is read back exactly from the op's own output: a 16-bit mask
// numbers every pixel of a 192 x 192 image (y * 192 + x), and the op resizes it up to 192 x 192 by nearest
// neighbour, so the output shows every column and row of the window once or more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "conveyor/ops/sample_ops.h"

namespace conveyor::ops {
namespace {

constexpr int kSide = 192;

RandomResizedCropOptions scales(double lo, double hi) {
  RandomResizedCropOptions options;
  options.scale_min = lo;
  options.scale_max = hi;
  return options;
}

struct Window {
  int x, y, width, height;
};

Window window_of(std::uint64_t seed, const RandomResizedCropOptions& options) {
  Sample sample;
  sample.seed = seed;
  const ImageView image = sample.output({kSide, kSide, 1});
  for (int y = 0; y < kSide; ++y) std::memset(image.row(y), 0, kSide);
  sample.publish();
  const MaskView mask = sample.mask_output({kSide, kSide, MaskType::uint16});
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x) {
      const auto id = static_cast<std::uint16_t>(y * kSide + x);
      std::memcpy(mask.row(y) + 2 * x, &id, 2);
    }
  sample.publish_mask();
  random_resized_crop(kSide, options).apply(sample);
  std::set<int> columns, rows;
  const ConstMaskView out = sample.mask();
  for (int i = 0; i < kSide; ++i) {
    columns.insert(static_cast<int>(out.at(0, i) % kSide));
    rows.insert(static_cast<int>(out.at(i, 0) / kSide));
  }
  return {*columns.begin(), *rows.begin(), static_cast<int>(columns.size()), static_cast<int>(rows.size())};
}

// Kolmogorov-Smirnov distance of the values from the uniform distribution on [lo, hi].
double ks_uniform(std::vector<double> values, double lo, double hi) {
  std::sort(values.begin(), values.end());
  double distance = 0;
  const auto n = static_cast<double>(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double cdf = std::clamp((values[i] - lo) / (hi - lo), 0.0, 1.0);
    distance = std::max({distance, std::abs(cdf - static_cast<double>(i) / n),
                         std::abs(cdf - static_cast<double>(i + 1) / n)});
  }
  return distance;
}

TEST(RandomResizedCropOp, AreaAndLogAspectAreUniformAndPlacementIsUniform) {
  // Scales up to 0.5 keep every first draw inside the square image (0.5 * 4/3 < 1), so no draw is rejected
  // and the drawn scale and ratio are what the windows show.
  const RandomResizedCropOptions options = scales(0.08, 0.5);
  constexpr int kDraws = 1000;
  std::vector<double> scales, log_ratios, places;
  for (std::uint64_t seed = 0; seed < kDraws; ++seed) {
    const Window w = window_of(seed, options);
    scales.push_back(static_cast<double>(w.width) * w.height / (kSide * kSide));
    log_ratios.push_back(std::log(static_cast<double>(w.width) / w.height));
    if (w.width < kSide) places.push_back((w.x + 0.5) / (kSide - w.width + 1));
  }
  // 1.63 / sqrt(n): the 1 % critical value; the windows' integer sides blur the draws by under a pixel.
  const double critical = 1.63 / std::sqrt(static_cast<double>(kDraws));
  EXPECT_LT(ks_uniform(scales, 0.08, 0.5), critical);
  EXPECT_LT(ks_uniform(log_ratios, std::log(3.0 / 4), std::log(4.0 / 3)), critical);
  EXPECT_LT(ks_uniform(places, 0, 1), 1.63 / std::sqrt(static_cast<double>(places.size())));
  // Both ends of both ranges are reached.
  EXPECT_LT(*std::min_element(scales.begin(), scales.end()), 0.085);
  EXPECT_GT(*std::max_element(scales.begin(), scales.end()), 0.49);
  EXPECT_LT(*std::min_element(log_ratios.begin(), log_ratios.end()), std::log(3.0 / 4) + 0.02);
  EXPECT_GT(*std::max_element(log_ratios.begin(), log_ratios.end()), std::log(4.0 / 3) - 0.02);
}

TEST(RandomResizedCropOp, AWrongDistributionWouldFailTheTest) {
  // The same statistic on windows drawn from [0.08, 0.29] (half the scale range) instead: far over.
  const RandomResizedCropOptions options = scales(0.08, 0.29);
  std::vector<double> scales;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const Window w = window_of(seed, options);
    scales.push_back(static_cast<double>(w.width) * w.height / (kSide * kSide));
  }
  EXPECT_GT(ks_uniform(scales, 0.08, 0.5), 1.63 / std::sqrt(300.0));
}

}  // namespace
}  // namespace conveyor::ops
