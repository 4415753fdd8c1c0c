// random_resized_crop: torchvision's window rules, and the fused decode against decode + crop + resize.
#include "conveyor/ops/random_resized_crop.h"

#include <gtest/gtest.h>

#include <cmath>

#include "conveyor/error.h"
#include "conveyor/ops/center_crop.h"
#include "conveyor/ops/crop.h"
#include "jpeg_fixtures.h"
#include "support/test_images.h"

namespace conveyor::ops {
namespace {

TEST(RandomResizedCropWindow, FollowsTheScaleAndRatioRanges) {
  Rng rng(17);
  const RandomResizedCropOptions options;
  int small = 0;
  double centre_x = 0;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) {
    const Rect w = random_resized_crop_window(375, 500, options, rng);
    ASSERT_TRUE(w.inside(500, 375));
    const double fraction = static_cast<double>(w.width) * w.height / (500.0 * 375.0);
    const double ratio = static_cast<double>(w.width) / w.height;
    ASSERT_GE(fraction, 0.08 * 0.93);  // sides are rounded to whole pixels
    ASSERT_GE(ratio, 0.75 * 0.95);
    ASSERT_LE(ratio, 4.0 / 3 * 1.05);
    small += fraction < 0.3;
    centre_x += w.x + w.width / 2.0;
  }
  // Areas are drawn uniformly from [0.08, 1], but large windows often do not fit a 4:3 image and are
  // redrawn: torchvision's get_params, simulated in Python (200,000 draws), puts 32.4 % below 0.3.
  EXPECT_NEAR(static_cast<double>(small) / kDraws, 0.324, 0.015);
  EXPECT_NEAR(centre_x / kDraws, 250, 5);  // placed uniformly: centred on average
}

TEST(RandomResizedCropWindow, FallsBackToTheCentreAtTheNearestAllowedRatio) {
  Rng rng(1);
  RandomResizedCropOptions large;
  large.scale_min = 0.9;  // never fits a 10:1 image at a ratio of at most 4:3
  EXPECT_EQ(random_resized_crop_window(1000, 100, large, rng), (Rect{0, 433, 100, 133}));
  EXPECT_EQ(random_resized_crop_window(100, 1000, large, rng), (Rect{433, 0, 133, 100}));
  RandomResizedCropOptions impossible;
  impossible.scale_min = 2;
  impossible.scale_max = 3;
  EXPECT_EQ(random_resized_crop_window(300, 350, impossible, rng), (Rect{0, 0, 350, 300}));
}

TEST(RandomResizedCropWindow, SameSeedSameWindowAndBadOptionsAreRefused) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    Rng a(seed), b(seed);
    EXPECT_EQ(random_resized_crop_window(375, 500, {}, a), random_resized_crop_window(375, 500, {}, b));
  }
  Rng rng(0);
  RandomResizedCropOptions bad;
  bad.scale_min = 0.5;
  bad.scale_max = 0.4;
  EXPECT_THROW(random_resized_crop_window(10, 10, bad, rng), InvalidArgument);
  bad = {};
  bad.ratio_min = 0;
  EXPECT_THROW(random_resized_crop_window(10, 10, bad, rng), InvalidArgument);
}

TEST(RandomResizedCrop, OnPixelsIsTheWindowResized) {
  const Image image = testing::make_picture(120, 160, 3, 5);
  Rng rng(4), again(4);
  Image out(32, 32, 3), expected(32, 32, 3);
  random_resized_crop(image.view(), out.view(), {}, rng);
  resize(crop(image.view(), random_resized_crop_window(120, 160, {}, again)), expected.view());
  EXPECT_EQ(testing::max_abs_diff(out.view(), expected.view()), 0);
}

// The reference for the fused decode: decode the whole image at the scale the window allows, cut the
// window (rounded to the nearest decoded pixel), resize.
Image decode_crop_resize(const std::vector<std::uint8_t>& jpeg, Rect window, int size,
                         const DecodeOptions& options) {
  JpegDecoder decoder;
  decoder.open(jpeg, options);
  const int scale = choose_dct_scale(window.width, window.height, size, size);
  Image full(decoder.shape(scale));
  decoder.read(full.view(), scale);
  const auto down = [scale](int v) { return (v + scale / 2) / scale; };
  const int x0 = std::min(down(window.x), full.width() - 1), y0 = std::min(down(window.y), full.height() - 1);
  const int x1 = std::clamp(down(window.right()), x0 + 1, full.width());
  const int y1 = std::clamp(down(window.bottom()), y0 + 1, full.height());
  Image out(size, size, full.channels());
  resize(crop(ConstImageView(full.view()), Rect{x0, y0, x1 - x0, y1 - y0}), out.view());
  return out;
}

TEST(DecodeRandomResizedCrop, EqualsDecodeAtTheChosenScaleThenCropThenResize) {
  const auto jpeg = testing::make_jpeg(600, 800, 3, 8);
  JpegDecoder decoder;
  int scaled = 0;
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    Rng rng(seed), window_rng(seed);
    Image out(40, 40, 3);
    const DecodeResult result = decode_random_resized_crop(decoder, jpeg, out.view(), {}, rng);
    const Rect window = random_resized_crop_window(600, 800, {}, window_rng);
    EXPECT_EQ(result.scale_denom, choose_dct_scale(window.width, window.height, 40, 40));
    scaled += result.scale_denom > 1;
    EXPECT_EQ(testing::max_abs_diff(out.view(), decode_crop_resize(jpeg, window, 40, {}).view()), 0)
        << "seed " << seed;
  }
  EXPECT_GT(scaled, 8);  // at 40 x 40 most windows of an 800 x 600 image allow a DCT scale
}

TEST(DecodeRandomResizedCrop, GrayFilesKeepOneChannelWhenAsked) {
  const auto jpeg = testing::make_jpeg(80, 90, 1, 2);
  RandomResizedCropOptions options;
  options.decode.color = ColorMode::keep;
  JpegDecoder decoder;
  Rng rng(3);
  Image out(24, 24, 1);
  decode_random_resized_crop(decoder, jpeg, out.view(), options, rng);
  Image wrong(24, 24, 3);
  EXPECT_THROW(decode_random_resized_crop(decoder, jpeg, wrong.view(), options, rng), InvalidArgument);
}

TEST(DecodeRandomResizedCrop, WindowsAreDrawnInTheUprightImage) {
  const auto plain = testing::make_jpeg(90, 140, 3, 6);
  const auto turned = testing::with_exif_orientation(plain, 6);
  RandomResizedCropOptions options;
  options.decode.apply_exif_orientation = true;
  JpegDecoder decoder;
  Rng rng(9), window_rng(9);
  Image out(48, 48, 3);
  decode_random_resized_crop(decoder, turned, out.view(), options, rng);
  const Rect window = random_resized_crop_window(140, 90, options, window_rng);  // upright: 90 wide, 140 tall
  EXPECT_EQ(testing::max_abs_diff(out.view(), decode_crop_resize(turned, window, 48, options.decode).view()),
            0);
}

TEST(DecodeCenterCrop, IsTheEvaluationTransformOnlyDecodingTheCentre) {
  for (const auto& [height, width, size] : {std::tuple{150, 200, 64}, std::tuple{600, 800, 70},
                                            std::tuple{200, 133, 50}, std::tuple{64, 64, 64}}) {
    const auto jpeg = testing::make_jpeg(height, width, 3, 4);
    JpegDecoder decoder;
    Image out(size, size, 3);
    const DecodeResult result = decode_center_crop(decoder, jpeg, out.view());
    const Rect window = center_fit_window(height, width, size, size);
    EXPECT_EQ(result.scale_denom, choose_dct_scale(window.width, window.height, size, size));
    EXPECT_EQ(testing::max_abs_diff(out.view(), decode_crop_resize(jpeg, window, size, {}).view()), 0)
        << height << "x" << width << " -> " << size;
  }
}

}  // namespace
}  // namespace conveyor::ops
