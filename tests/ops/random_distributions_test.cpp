// Every random op draws from the distribution its header documents, tested over the seeds the pipeline
// gives samples (sample_seed of consecutive indices, each op's own stream): the flip's rate; the colour
// jitter's factors over the whole of [max(0, 1 - s), 1 + s], its hue over [-h, h], its orders; random resized
// crop's area and log-ratio ranges and its redraws (torchvision's RandomResizedCrop.get_params) and where it
// places the window; random crop's positions. Each check fails by chance with probability at most 1e-6
// (support/distribution_checks.h); the defects it is there for (an interval cut short, shifted or not
// clipped at 0, a uniform draw where a log-uniform one belongs, a rate of 0.6 for 0.5) fail it by far.
// scripts/mutation_check.sh keeps three of them in view.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "conveyor/ops/crop.h"
#include "conveyor/ops/distort.h"
#include "conveyor/ops/flip.h"
#include "conveyor/ops/random_resized_crop.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "conveyor/sample.h"
#include "support/distribution_checks.h"

namespace conveyor::ops {
namespace {

// Enough draws that a CDF 3 % off (an interval shifted by 3 % of its width, say), a rate 0.03 off, or an
// interval's end missed by 0.07 % of its width fails; a test's draws take a few milliseconds.
constexpr std::size_t kDraws = 20000;

// The seed of sample i of an epoch, as the pipeline makes it.
std::uint64_t seed_of(std::size_t i) { return sample_seed(2024, 0, i); }

// ---- flip ------------------------------------------------------------------------------------------------

TEST(FlipDraws, MirrorWithProbabilityP) {
  for (const double p : {0.5, 0.1, 0.75}) {
    std::size_t flips = 0;
    for (std::size_t i = 0; i < kDraws; ++i)
      flips += draw_flip(p, seed_of(i), op_stream(stream::flip_horizontal, 0));
    EXPECT_TRUE(testing::succeeds_with_probability(flips, kDraws, p)) << "p = " << p;
  }
  for (std::size_t i = 0; i < 1000; ++i) {
    ASSERT_FALSE(draw_flip(0.0, seed_of(i), op_stream(stream::flip_horizontal, 0)));
    ASSERT_TRUE(draw_flip(1.0, seed_of(i), op_stream(stream::flip_horizontal, 0)));
  }
}

// Through the SampleOps with their default p, seen in their output: a two-pixel image either way round.
TEST(FlipDraws, TheFlipOpsMirrorHalfTheSamplesByDefault) {
  for (const bool horizontal : {true, false}) {
    const SampleOp op = horizontal ? flip_horizontal() : flip_vertical();
    const ImageShape shape = horizontal ? ImageShape{1, 2, 1} : ImageShape{2, 1, 1};
    std::size_t flips = 0;
    for (std::size_t i = 0; i < kDraws; ++i) {
      Sample sample;
      sample.seed = seed_of(i);
      const ImageView image = sample.output(shape);
      image.row(0)[0] = 1;
      image.row(horizontal ? 0 : 1)[horizontal ? 1 : 0] = 2;
      sample.publish();
      op.apply(sample);
      flips += sample.image().row(0)[0] == 2;
    }
    EXPECT_TRUE(testing::succeeds_with_probability(flips, kDraws, 0.5)) << op.name;
  }
}

// ---- distort (torchvision's ColorJitter) ----------------------------------------------------------------

struct JitterDraws {
  std::vector<double> brightness, contrast, saturation, hue;
  std::vector<std::array<ColorAdjustment, 4>> orders;
};

// What the distort SampleOp at position 0 of a chain draws for kDraws samples.
JitterDraws draw_jitters(const DistortOptions& options) {
  JitterDraws draws;
  for (std::size_t i = 0; i < kDraws; ++i) {
    Rng rng(seed_of(i), op_stream(stream::distort, 0));
    const ColorJitter j = draw_color_jitter(options, rng);
    draws.brightness.push_back(j.brightness);
    draws.contrast.push_back(j.contrast);
    draws.saturation.push_back(j.saturation);
    draws.hue.push_back(j.hue);
    draws.orders.push_back(j.order);
  }
  return draws;
}

// A factor of spread s: uniform over [max(0, 1 - s), 1 + s], both ends reached.
void expect_factor_of_spread(const std::vector<double>& draws, double s, const char* what) {
  const double lo = std::max(0.0, 1 - s), hi = 1 + s;
  EXPECT_TRUE(testing::uniform_on(draws, lo, hi)) << what << " " << s;
  EXPECT_TRUE(testing::reaches_both_ends(draws, lo, hi)) << what << " " << s;
}

TEST(ColorJitterDraws, FactorsAreUniformOverTheWholeInterval) {
  const DistortOptions options{.brightness = 0.4, .contrast = 0.25, .saturation = 0.6, .hue = 0.1};
  const JitterDraws draws = draw_jitters(options);
  expect_factor_of_spread(draws.brightness, options.brightness, "brightness");
  expect_factor_of_spread(draws.contrast, options.contrast, "contrast");
  expect_factor_of_spread(draws.saturation, options.saturation, "saturation");
}

// torchvision clips the lower end of a factor's interval at 0: a spread above 1 draws from [0, 1 + s].
TEST(ColorJitterDraws, SpreadsAboveOneStartTheirIntervalAtZero) {
  const DistortOptions options{.brightness = 1.5, .contrast = 3.0, .saturation = 1.2};
  const JitterDraws draws = draw_jitters(options);
  expect_factor_of_spread(draws.brightness, options.brightness, "brightness");
  expect_factor_of_spread(draws.contrast, options.contrast, "contrast");
  expect_factor_of_spread(draws.saturation, options.saturation, "saturation");
}

TEST(ColorJitterDraws, HueIsUniformOverMinusHToH) {
  for (const double h : {0.1, 0.5}) {
    const JitterDraws draws = draw_jitters({.hue = h});
    EXPECT_TRUE(testing::uniform_on(draws.hue, -h, h)) << "hue " << h;
    EXPECT_TRUE(testing::reaches_both_ends(draws.hue, -h, h)) << "hue " << h;
  }
}

TEST(ColorJitterDraws, EveryOrderOfTheFourAdjustmentsIsEquallyLikely) {
  const JitterDraws draws = draw_jitters({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1});
  std::map<std::array<ColorAdjustment, 4>, std::size_t> index;
  std::array<ColorAdjustment, 4> order = ColorJitter{}.order;  // sorted: brightness, contrast, ...
  do index.emplace(order, index.size());
  while (std::next_permutation(order.begin(), order.end()));
  std::vector<std::size_t> counts(index.size(), 0);
  for (const auto& drawn : draws.orders) ++counts[index.at(drawn)];
  EXPECT_EQ(counts.size(), 24u);
  EXPECT_TRUE(testing::equally_likely(counts));
}

// ---- random resized crop (torchvision's RandomResizedCrop.get_params) -------------------------------------

// What decode_random_resized_crop at position 0 of a chain draws for kDraws samples of one image size.
std::vector<Rect> draw_windows(int height, int width, const RandomResizedCropOptions& options) {
  std::vector<Rect> windows;
  for (std::size_t i = 0; i < kDraws; ++i)
    windows.push_back(draw_random_resized_crop_window(height, width, options, seed_of(i),
                                                      op_stream(stream::random_resized_crop, 0)));
  return windows;
}

double area_fraction(Rect w, int height, int width) {
  return static_cast<double>(w.width) * w.height / (static_cast<double>(height) * width);
}
double log_ratio(Rect w) { return std::log(static_cast<double>(w.width) / w.height); }

// A large square image, so that rounding the sides to whole pixels hardly shows: it moves an area fraction
// or a log-ratio by less than 3e-4 (half a pixel of a side of at least 4,000), the CDFs by less than 1e-3.
constexpr int kSide = 16384;
constexpr double kRounding = 1e-3;

// With scale_max <= 1 / ratio_max every first draw fits the square (the widest window, of area 0.75 and
// ratio 4/3, is exactly as wide as the image), so what is drawn is what comes out: area fraction ~ U(scale),
// log(width / height) ~ U(log ratio_min, log ratio_max).
TEST(RandomResizedCropDraws, AreaIsUniformAndAspectLogUniformWhereEveryDrawFits) {
  RandomResizedCropOptions options;
  options.scale_max = 0.75;
  std::vector<double> areas, log_ratios;
  for (const Rect w : draw_windows(kSide, kSide, options)) {
    areas.push_back(area_fraction(w, kSide, kSide));
    log_ratios.push_back(log_ratio(w));
  }
  EXPECT_TRUE(testing::uniform_on(areas, options.scale_min, options.scale_max, kRounding));
  EXPECT_TRUE(testing::reaches_both_ends(areas, options.scale_min, options.scale_max, kRounding));
  const double t0 = std::log(options.ratio_min), t1 = std::log(options.ratio_max);
  EXPECT_TRUE(testing::uniform_on(log_ratios, t0, t1, kRounding));
  EXPECT_TRUE(testing::reaches_both_ends(log_ratios, t0, t1, kRounding));
}

// With the defaults (area 0.08..1, ratio 3/4..4/3) large windows of a square image that are not square
// enough do not fit: get_params draws again (up to 10 times; all 10 miss with probability 3e-9 here), so
// (area s, log-ratio t) is uniform over the part of the rectangle that fits, s * exp(|t|) <= 1. Its
// marginals, in closed form (T = log 4/3, a = 0.08, c = exp(-T) = 3/4):
//   area:      density ~ 2T for s <= c, -2 log s above;
//   log-ratio: density ~ exp(-|t|) - a.
// A window clamped into the image instead of drawn again, or fewer tries, piles up mass at large areas.
TEST(RandomResizedCropDraws, WithTheDefaultsWindowsThatDoNotFitAreDrawnAgain) {
  const RandomResizedCropOptions options;
  const double a = options.scale_min, T = std::log(options.ratio_max), c = std::exp(-T);
  ASSERT_DOUBLE_EQ(std::log(options.ratio_min), -T);  // the closed forms assume a symmetric range
  // The integrals of the densities, of the area from a to s and of the log-ratio from -T to t.
  const auto area_mass = [&](double s) {
    const auto antiderivative = [](double u) { return 2 * (u - u * std::log(u)); };
    return 2 * T * (std::min(s, c) - a) + (s > c ? antiderivative(s) - antiderivative(c) : 0.0);
  };
  const auto ratio_mass = [&](double t) {
    const double at_zero = 1 - std::exp(-T) - a * T;
    return t <= 0 ? std::exp(t) - std::exp(-T) - a * (t + T) : at_zero + 1 - std::exp(-t) - a * t;
  };
  std::vector<double> areas, log_ratios;
  for (const Rect w : draw_windows(kSide, kSide, options)) {
    areas.push_back(area_fraction(w, kSide, kSide));
    log_ratios.push_back(log_ratio(w));
  }
  EXPECT_TRUE(testing::follows_cdf(
      areas, [&](double s) { return std::clamp(area_mass(s) / area_mass(1.0), 0.0, 1.0); }, kRounding));
  EXPECT_TRUE(testing::follows_cdf(
      log_ratios, [&](double t) { return std::clamp(ratio_mass(t) / ratio_mass(T), 0.0, 1.0); }, kRounding));
  EXPECT_GE(*std::min_element(areas.begin(), areas.end()), a - kRounding);
}

// A window is placed uniformly over the positions where it fits: x ~ U{0, ..., width - w}, and the same for
// y. Spread evenly over [0, 1) by a uniform jitter inside each position, every window's place joins one
// continuous test however its margin varies.
TEST(RandomResizedCropDraws, WindowsArePlacedUniformlyWhereTheyFit) {
  constexpr int kHeight = 375, kWidth = 500;  // a photo, which most large windows do not fit
  Rng jitter(77);
  std::vector<double> xs, ys;
  std::size_t left = 0, right = 0, top = 0, bottom = 0;
  for (const Rect w : draw_windows(kHeight, kWidth, {})) {
    ASSERT_TRUE(w.inside(kWidth, kHeight));
    xs.push_back((w.x + jitter.uniform()) / (kWidth - w.width + 1));
    ys.push_back((w.y + jitter.uniform()) / (kHeight - w.height + 1));
    left += w.x == 0, right += w.right() == kWidth, top += w.y == 0, bottom += w.bottom() == kHeight;
  }
  EXPECT_TRUE(testing::uniform_on(xs, 0, 1));
  EXPECT_TRUE(testing::uniform_on(ys, 0, 1));
  // Both extreme places occur (the left and right ones in about 1 window of 160, the top and bottom ones in 1
  // of 30).
  EXPECT_GT(left, 0u);
  EXPECT_GT(right, 0u);
  EXPECT_GT(top, 0u);
  EXPECT_GT(bottom, 0u);
}

// ---- random crop (torchvision's RandomCrop with padding) --------------------------------------------------

TEST(RandomCropDraws, EveryPositionOfThePaddedImageIsEquallyLikely) {
  struct Case {
    int image_height, image_width, height, width, padding;
  };
  for (const Case c : {Case{28, 28, 28, 28, 4}, Case{20, 30, 16, 24, 2}}) {
    const int rows = c.image_height + 2 * c.padding - c.height + 1;
    const int columns = c.image_width + 2 * c.padding - c.width + 1;
    std::vector<std::size_t> counts(static_cast<std::size_t>(rows) * columns, 0);
    for (std::size_t i = 0; i < kDraws; ++i) {
      Rng rng(seed_of(i), op_stream(stream::random_crop, 0));
      const Rect w = random_crop_window(c.image_height, c.image_width, c.height, c.width, c.padding, rng);
      ASSERT_GE(w.x, -c.padding);
      ASSERT_GE(w.y, -c.padding);
      ASSERT_LT(w.x + c.padding, columns);
      ASSERT_LT(w.y + c.padding, rows);
      ++counts[static_cast<std::size_t>(w.y + c.padding) * columns + (w.x + c.padding)];
    }
    EXPECT_TRUE(testing::equally_likely(counts)) << c.image_height << "x" << c.image_width;
  }
}

}  // namespace
}  // namespace conveyor::ops
