// distort: against a plain per-pixel implementation of the documented ColorJitter semantics.
#include "conveyor/ops/distort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <vector>

#include "conveyor/error.h"
#include "ops/image/distort_kernels.h"  // internal: the kernels are compared directly
#include "support/test_images.h"

namespace conveyor::ops {
namespace {

double clamp_truncate(double x) { return std::trunc(std::clamp(x, 0.0, 255.0)); }
double gray_of(const double* p) { return std::floor(0.2989 * p[0] + 0.587 * p[1] + 0.114 * p[2]); }

// Hue: rotate I and Q of YIQ by the angle; the same NTSC matrix, inverted numerically here.
void rotate_hue(double* p, double turns) {
  const double y = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
  const double i = 0.595716 * p[0] - 0.274453 * p[1] - 0.321263 * p[2];
  const double q = 0.211456 * p[0] - 0.522591 * p[1] + 0.311135 * p[2];
  const double a = -2 * std::numbers::pi * turns;
  const double i2 = i * std::cos(a) - q * std::sin(a), q2 = i * std::sin(a) + q * std::cos(a);
  // Inverse NTSC YIQ.
  const double rgb[3] = {y + 0.9562948 * i2 + 0.6210248 * q2, y - 0.2721214 * i2 - 0.6473809 * q2,
                         y - 1.1069890 * i2 + 1.7046150 * q2};
  for (int c = 0; c < 3; ++c) p[c] = std::trunc(std::clamp(rgb[c] + 0.5, 0.0, 255.0));
}

Image reference_distort(ConstImageView image, const ColorJitter& jitter) {
  const int n = image.height * image.width, channels = image.channels;
  std::vector<double> px(static_cast<std::size_t>(n) * channels);
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width * channels; ++x) px[y * image.width * channels + x] = image.row(y)[x];
  for (const ColorAdjustment what : jitter.order) {
    if (what == ColorAdjustment::brightness && jitter.brightness != 1) {
      for (double& v : px) v = clamp_truncate(v * jitter.brightness);
    } else if (what == ColorAdjustment::contrast && jitter.contrast != 1) {
      double sum[3] = {0, 0, 0};
      for (int i = 0; i < n * channels; ++i) sum[i % channels] += px[i];
      const double mean =
          channels == 3 ? (0.2989 * sum[0] + 0.587 * sum[1] + 0.114 * sum[2]) / n : sum[0] / n;
      for (double& v : px) v = clamp_truncate(v * jitter.contrast + mean * (1 - jitter.contrast));
    } else if (what == ColorAdjustment::saturation && jitter.saturation != 1 && channels == 3) {
      for (std::size_t i = 0; i < px.size() / 3; ++i) {
        const double g = gray_of(&px[3 * i]);
        for (int c = 0; c < 3; ++c)
          px[3 * i + c] = clamp_truncate(px[3 * i + c] * jitter.saturation + g * (1 - jitter.saturation));
      }
    } else if (what == ColorAdjustment::hue && jitter.hue != 0 && channels == 3) {
      for (std::size_t i = 0; i < px.size() / 3; ++i) rotate_hue(&px[3 * i], jitter.hue);
    }
  }
  Image out(image.shape());
  for (std::size_t i = 0; i < px.size(); ++i) out.data()[i] = static_cast<std::uint8_t>(px[i]);
  return out;
}

TEST(Distort, EveryOrderAndFactorMatchesThePlainDefinition) {
  for (const int channels : {3, 1}) {
    const Image original = testing::make_picture(37, 53, channels, 9);
    Rng rng(99);
    for (int i = 0; i < 60; ++i) {
      const ColorJitter jitter =
          draw_color_jitter({.brightness = 0.6, .contrast = 0.6, .saturation = 0.8, .hue = 0.4}, rng);
      Image image = original;
      distort(image.view(), jitter);
      const Image expected = reference_distort(original.view(), jitter);
      // float (SIMD) against double: a value on a truncation boundary may land one level apart, and a
      // later factor (saturation up to 1.8, a hue rotation) can widen that to a few levels, rarely.
      EXPECT_LE(testing::max_abs_diff(image.view(), expected.view()), 4) << "draw " << i;
      EXPECT_LT(testing::mean_abs_diff(image.view(), expected.view()), 0.02) << "draw " << i;
    }
  }
}

TEST(Distort, BrightnessTruncatesLikeTorchvisionOnUint8) {
  Image image(1, 4, 3);
  const std::uint8_t values[12] = {255, 0, 1, 3, 100, 101, 200, 201, 254, 7, 9, 11};
  std::copy(values, values + 12, image.data());
  ColorJitter jitter;
  jitter.brightness = 0.5;
  distort(image.view(), jitter);
  const std::uint8_t expected[12] = {127, 0, 0, 1, 50, 50, 100, 100, 127, 3, 4, 5};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(image.data()[i], expected[i]) << i;
  jitter.brightness = 1.5;
  distort(image.view(), jitter);
  EXPECT_EQ(image.data()[0], 190);
  EXPECT_EQ(image.data()[6], 150);
}

TEST(Distort, ContrastZeroGivesTheGrayMeanEverywhere) {
  const Image original = testing::make_picture(20, 30, 3, 1);
  double mean = 0;
  for (std::size_t i = 0; i < 600; ++i) {
    const std::uint8_t* p = original.data() + 3 * i;
    mean += 0.2989 * p[0] + 0.587 * p[1] + 0.114 * p[2];
  }
  mean /= 600;
  Image image = original;
  ColorJitter jitter;
  jitter.contrast = 0;
  distort(image.view(), jitter);
  for (int i = 0; i < 600 * 3; ++i) ASSERT_EQ(image.data()[i], static_cast<int>(mean));
}

TEST(Distort, IdentityJitterLeavesPixelsAloneAndGrayIgnoresSaturationAndHue) {
  const Image original = testing::make_picture(16, 17, 3, 2);
  Image image = original;
  distort(image.view(), ColorJitter{});
  EXPECT_EQ(testing::max_abs_diff(image.view(), original.view()), 0);
  const Image gray = testing::make_picture(16, 17, 1, 2);
  Image gray_image = gray;
  ColorJitter colour_only;
  colour_only.saturation = 0.2;
  colour_only.hue = 0.3;
  distort(gray_image.view(), colour_only);
  EXPECT_EQ(testing::max_abs_diff(gray_image.view(), gray.view()), 0);
}

TEST(Distort, HueKeepsGraysAndTurnsRedTowardsYellow) {
  Image image(1, 2, 3);
  const std::uint8_t pixels[6] = {200, 30, 30, 90, 90, 90};
  std::copy(pixels, pixels + 6, image.data());
  ColorJitter jitter;
  jitter.hue = 0.08;
  distort(image.view(), jitter);
  EXPECT_GT(image.data()[1], image.data()[2]);  // green rose above blue: red moved towards yellow
  for (int c = 3; c < 6; ++c) EXPECT_NEAR(image.data()[c], 90, 1);
  // Half a turn either way is the same rotation.
  Image a = testing::make_picture(9, 9, 3), b = a;
  jitter.hue = 0.5;
  distort(a.view(), jitter);
  jitter.hue = -0.5;
  distort(b.view(), jitter);
  EXPECT_LE(testing::max_abs_diff(a.view(), b.view()), 1);
}

TEST(Distort, DrawsFactorsInRangeAndEveryOrderEquallyOften) {
  Rng rng(3);
  std::map<std::array<ColorAdjustment, 4>, int> orders;
  for (int i = 0; i < 24000; ++i) {
    const ColorJitter j =
        draw_color_jitter({.brightness = 0.4, .contrast = 1.5, .saturation = 0.4, .hue = 0.1}, rng);
    ASSERT_GE(j.brightness, 0.6);
    ASSERT_LE(j.brightness, 1.4);
    ASSERT_GE(j.contrast, 0.0);  // max(0, 1 - 1.5)
    ASSERT_LE(j.contrast, 2.5);
    ASSERT_GE(j.hue, -0.1);
    ASSERT_LE(j.hue, 0.1);
    ++orders[j.order];
  }
  EXPECT_EQ(orders.size(), 24u);
  for (const auto& [order, count] : orders) {
    EXPECT_GT(count, 800);
    EXPECT_LT(count, 1200);
  }
  const ColorJitter none = draw_color_jitter({}, rng);
  EXPECT_EQ(none.brightness, 1);
  EXPECT_EQ(none.hue, 0);
}

TEST(Distort, BadRangesAreInvalidArguments) {
  Rng rng(1);
  EXPECT_THROW(draw_color_jitter({.brightness = -0.1}, rng), InvalidArgument);
  EXPECT_THROW(draw_color_jitter({.hue = 0.6}, rng), InvalidArgument);
  Image four(2, 2, 4);
  EXPECT_THROW(distort(four.view(), ColorJitter{}), InvalidArgument);
}

TEST(Distort, WorksOnStridedViews) {
  const Image original = testing::make_picture(10, 11, 3, 4);
  std::vector<std::uint8_t> memory(std::size_t{10} * 40, 0xEE);
  const ImageView view(memory.data(), {10, 11, 3}, 40);
  for (int y = 0; y < 10; ++y) std::copy(original.view().row(y), original.view().row(y) + 33, view.row(y));
  ColorJitter jitter;
  jitter.contrast = 1.3;
  jitter.saturation = 0.5;
  distort(view, jitter);
  EXPECT_LE(testing::max_abs_diff(view, reference_distort(original.view(), jitter).view()), 2);
  for (int y = 0; y < 10; ++y) EXPECT_EQ(memory[y * 40 + 39], 0xEE);
}

}  // namespace
}  // namespace conveyor::ops

namespace conveyor::ops {
namespace {

// The hand-written AVX2 kernel (where the CPU has it) and the portable one must give the same bytes.
TEST(DistortKernels, EveryKernelGivesTheSameBytes) {
  const Image original =
      testing::make_picture(9, 203, 3, 13);  // 203 = 25 * 8 + 3: a tail for the portable one
  Rng rng(5);
  for (int i = 0; i < 40; ++i) {
    const ColorJitter jitter =
        draw_color_jitter({.brightness = 0.5, .contrast = 0.5, .saturation = 0.9, .hue = 0.5}, rng);
    detail::ColorPass pass;
    const bool flat = i % 2 == 1;  // brightness and contrast only: the kernels for interleaved bytes
    for (const ColorAdjustment what : jitter.order) {
      if (flat && (what == ColorAdjustment::saturation || what == ColorAdjustment::hue)) continue;
      float factor = what == ColorAdjustment::brightness   ? static_cast<float>(jitter.brightness)
                     : what == ColorAdjustment::contrast   ? static_cast<float>(jitter.contrast)
                     : what == ColorAdjustment::saturation ? static_cast<float>(jitter.saturation)
                                                           : 0.0f;
      pass.steps[pass.count++] = {what, factor, what == ColorAdjustment::contrast ? 37.5f : 0.0f};
    }
    pass.hue[0] = 0.7f, pass.hue[1] = 0.2f, pass.hue[2] = 0.1f, pass.hue[3] = -0.1f, pass.hue[4] = 1.05f;
    pass.hue[5] = 0.05f, pass.hue[6] = 0.3f, pass.hue[7] = -0.2f, pass.hue[8] = 0.9f;
    Image fast = original, portable = original;
    detail::ChannelSums fast_sums, portable_sums;
    for (int y = 0; y < original.height(); ++y) {
      detail::apply_color_row(fast.view().row(y), original.width(), 3, pass, &fast_sums);
      detail::apply_color_row_portable(portable.view().row(y), original.width(), 3, pass, &portable_sums);
    }
    EXPECT_EQ(testing::max_abs_diff(fast.view(), portable.view()), 0) << "draw " << i;
    for (int c = 0; c < 3; ++c) EXPECT_EQ(fast_sums.sum[c], portable_sums.sum[c]);
  }
}

}  // namespace
}  // namespace conveyor::ops
