// The CPU half of GPU decoding: the window a plan carries is the one the CPU op decodes for the same sample,
// and every image the GPU must not take says why. Runs without a GPU.
#include "src/device/nvjpeg/gpu_decode_plan.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

#include "../ops/jpeg_fixtures.h"
#include "conveyor/error.h"
#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/ops/random_resized_crop.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "support/test_images.h"

namespace conveyor::cuda {
namespace {

GpuDecodePlan plan(const std::vector<std::uint8_t>& jpeg, std::uint64_t seed,
                   const ops::RandomResizedCropOptions& options = {}) {
  return plan_random_resized_crop(jpeg, options, seed, op_stream(ops::stream::random_resized_crop, 0));
}

// The CPU op's output for the sample, and the same window decoded by hand: equal only if the windows are.
TEST(GpuDecodePlan, WindowIsTheOneTheCpuOpDecodes) {
  const std::vector<std::vector<std::uint8_t>> jpegs = {testing::make_jpeg(375, 500, 3, 1),
                                                        testing::make_jpeg(500, 333, 3, 2),
                                                        testing::make_jpeg(120, 90, 3, 3)};
  const SampleOp op = ops::decode_random_resized_crop(64);
  std::set<std::tuple<int, int, int, int>> windows;
  for (const auto& jpeg : jpegs)
    for (std::uint64_t index = 0; index < 40; ++index) {
      const std::uint64_t seed = sample_seed(9, 0, index);
      Sample sample;
      sample.seed = seed;
      sample.encoded = jpeg;
      op.apply(sample);
      const GpuDecodePlan p = plan(jpeg, seed);
      ASSERT_EQ(p.fallback, GpuDecodeFallback::none);
      ops::JpegDecoder decoder;
      decoder.open(jpeg);
      Image by_hand(64, 64, decoder.shape().channels);
      ops::decode_resized_window(decoder, p.window, by_hand.view(), ops::Interpolation::linear);
      ASSERT_EQ(testing::max_abs_diff(sample.image(), by_hand.view()), 0)
          << "seed " << seed << ": window " << p.window.width << "x" << p.window.height << "+" << p.window.x
          << "+" << p.window.y;
      windows.insert({p.window.x, p.window.y, p.window.width, p.window.height});
    }
  EXPECT_GT(windows.size(), 100u);  // the window depends on the seed
}

TEST(GpuDecodePlan, CarriesTheStoredSizeAndProgressiveFlag) {
  const Image picture = testing::make_picture(70, 110, 3, 4);
  const GpuDecodePlan baseline = plan(testing::encode_jpeg(picture.view()), 1);
  EXPECT_EQ(baseline.width, 110);
  EXPECT_EQ(baseline.height, 70);
  EXPECT_FALSE(baseline.progressive);
  const GpuDecodePlan progressive =
      plan(testing::encode_jpeg(picture.view(), 90, testing::Subsampling::s420, true), 1);
  EXPECT_EQ(progressive.fallback, GpuDecodeFallback::none);  // nvJPEG's software path takes these
  EXPECT_TRUE(progressive.progressive);
}

TEST(GpuDecodePlan, ImagesTheGpuMustNotTakeSayWhy) {
  const Image picture = testing::make_picture(40, 52, 3, 5);
  Image four(40, 52, 4);
  for (int i = 0; i < 40 * 52; ++i) {
    for (int c = 0; c < 3; ++c) four.data()[4 * i + c] = picture.data()[3 * i + c];
    four.data()[4 * i + 3] = 90;
  }
  EXPECT_EQ(plan(testing::encode_cmyk_jpeg(four.view()), 1).fallback, GpuDecodeFallback::cmyk);
  testing::LibjpegEncoding arithmetic;
  arithmetic.arithmetic = true;
  EXPECT_EQ(plan(testing::encode_with_libjpeg(picture.view(), arithmetic), 1).fallback,
            GpuDecodeFallback::arithmetic_coding);
  const std::vector<std::uint8_t> garbage = {'n', 'o', 't', ' ', 'a', ' ', 'j', 'p', 'e', 'g'};
  EXPECT_EQ(plan(garbage, 1).fallback, GpuDecodeFallback::unreadable);
  EXPECT_EQ(plan({}, 1).fallback, GpuDecodeFallback::unreadable);
  // nvJPEG's RGB output of a gray file is not specified: the CPU decodes those (gray output may go).
  EXPECT_EQ(plan(testing::make_jpeg(30, 40, 1, 6), 1).fallback, GpuDecodeFallback::gray);
  ops::RandomResizedCropOptions as_gray;
  as_gray.decode.color = ops::ColorMode::gray;
  EXPECT_EQ(plan(testing::make_jpeg(30, 40, 1, 6), 1, as_gray).fallback, GpuDecodeFallback::none);
  ops::RandomResizedCropOptions small;
  small.decode.max_pixels = 40 * 52 - 1;
  EXPECT_EQ(plan(testing::encode_jpeg(picture.view()), 1, small).fallback, GpuDecodeFallback::too_large);
}

TEST(GpuDecodePlan, ExifOrientationMattersOnlyWhenAskedFor) {
  const auto rotated = testing::with_exif_orientation(testing::make_jpeg(40, 60), 6);
  EXPECT_EQ(plan(rotated, 1).fallback, GpuDecodeFallback::none);  // stored pixels, as the CPU op decodes them
  ops::RandomResizedCropOptions upright;
  upright.decode.apply_exif_orientation = true;
  EXPECT_EQ(plan(rotated, 1, upright).fallback, GpuDecodeFallback::exif_orientation);
  EXPECT_EQ(plan(testing::with_exif_orientation(testing::make_jpeg(40, 60), 1), 1, upright).fallback,
            GpuDecodeFallback::none);
}

TEST(GpuDecodePlan, BadOptionsAreRefusedAsTheOpRefusesThem) {
  ops::RandomResizedCropOptions bad;
  bad.scale_min = 0;
  EXPECT_THROW(plan(testing::make_jpeg(20, 20), 1, bad), InvalidArgument);
}

TEST(GpuDecodePlan, FallbackNamesAreStable) {
  EXPECT_STREQ(to_string(GpuDecodeFallback::none), "none");
  EXPECT_STREQ(to_string(GpuDecodeFallback::cmyk), "cmyk");
  EXPECT_STREQ(to_string(GpuDecodeFallback::arithmetic_coding), "arithmetic_coding");
  EXPECT_STREQ(to_string(GpuDecodeFallback::not_supported), "not_supported");
  EXPECT_STREQ(to_string(GpuDecodeFallback::decode_failed), "decode_failed");
  EXPECT_STREQ(to_string(GpuDecodeFallback::gray), "gray");
  EXPECT_STREQ(to_string(GpuDecodeFallback::size_mismatch), "size_mismatch");
  EXPECT_STREQ(to_string(GpuDecodeFallback::engines_refused), "engines_refused");
}

}  // namespace
}  // namespace conveyor::cuda
