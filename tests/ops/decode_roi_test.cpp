// ROI decode: decoding a window must give exactly the pixels of a full decode (at the same scale) cropped.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/random.h"
#include "jpeg_fixtures.h"
#include "support/test_images.h"

namespace conveyor::ops {
namespace {

using testing::Subsampling;

std::vector<std::uint8_t> jpeg_of(int height, int width, Subsampling subsampling, bool progressive = false) {
  const int channels = subsampling == Subsampling::gray ? 1 : 3;
  const Image picture = testing::make_picture(height, width, channels, 11);
  return testing::encode_jpeg(picture.view(), 92, subsampling, progressive);
}

// Windows that stress the edges: odd offsets, iMCU boundaries +-1, single pixels, the borders.
std::vector<Rect> windows_for(int width, int height) {
  std::vector<Rect> windows = {
      {0, 0, width, height},
      {1, 1, width - 2, height - 2},
      {0, 0, 1, 1},
      {width - 1, height - 1, 1, 1},
      {0, height - 1, 1, 1},
      {width - 1, 0, 1, 1},
      {0, height - 2, 2, 2},
      {width - 4, height / 2, 4, 3},
      {3, 5, 7, 9},
      {15, 15, 2, 2},
      {16, 16, 17, 15},
      {17, 7, width - 17, 1},
      {width / 2, 0, width - width / 2, height},
      {0, height / 3, width, 5},
      {31, 33, 1, height - 33},
      {width - 9, 1, 9, height - 1},
  };
  Rng rng(width * 31 + height);
  for (int i = 0; i < 12; ++i) {
    const int w = 1 + static_cast<int>(rng.below(width)), h = 1 + static_cast<int>(rng.below(height));
    windows.push_back(
        {static_cast<int>(rng.below(width - w + 1)), static_cast<int>(rng.below(height - h + 1)), w, h});
  }
  std::vector<Rect> valid;
  for (const Rect& r : windows)
    if (r.inside(width, height)) valid.push_back(r);
  return valid;
}

std::string describe(Rect r) {
  return std::to_string(r.width) + "x" + std::to_string(r.height) + "+" + std::to_string(r.x) + "+" +
         std::to_string(r.y);
}

void expect_roi_equals_full_decode_cropped(const std::vector<std::uint8_t>& jpeg, bool fast) {
  DecodeOptions options;
  options.color = ColorMode::keep;
  options.fast = fast;
  JpegDecoder decoder;
  for (int denom : {1, 2, 4, 8}) {
    decoder.open(jpeg, options);
    Image full(decoder.shape(denom));
    decoder.read(full.view(), denom);
    for (const Rect& window : windows_for(full.width(), full.height())) {
      SCOPED_TRACE("scale 1/" + std::to_string(denom) + " window " + describe(window));
      decoder.open(jpeg, options);
      Image roi(window.height, window.width, full.channels());
      decoder.read_region(window, roi.view(), denom);
      const Image expected = testing::copy_of(full.view(), window);
      ASSERT_EQ(testing::max_abs_diff(roi.view(), expected.view()), 0);
      // The zero-copy variant must deliver the same pixels.
      decoder.open(jpeg, options);
      ASSERT_EQ(testing::max_abs_diff(decoder.read_region_view(window, denom), expected.view()), 0);
    }
  }
}

struct RoiCase {
  Subsampling subsampling;
  bool progressive;
  bool fast;
};

class RoiDecode : public ::testing::TestWithParam<RoiCase> {};

TEST_P(RoiDecode, EqualsFullDecodeCroppedBitForBitAtEveryScale) {
  const RoiCase c = GetParam();
  expect_roi_equals_full_decode_cropped(jpeg_of(203, 157, c.subsampling, c.progressive), c.fast);
}

std::string case_name(const ::testing::TestParamInfo<RoiCase>& info) {
  static const char* const kNames[] = {"444", "422", "420", "gray"};
  const RoiCase& c = info.param;
  return std::string(kNames[static_cast<int>(c.subsampling)]) +
         (c.progressive ? "_progressive" : "_baseline") + (c.fast ? "_fast" : "_accurate");
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, RoiDecode,
    ::testing::Values(RoiCase{Subsampling::s420, false, false}, RoiCase{Subsampling::s420, false, true},
                      RoiCase{Subsampling::s420, true, false}, RoiCase{Subsampling::s422, false, false},
                      RoiCase{Subsampling::s422, false, true}, RoiCase{Subsampling::s444, false, false},
                      RoiCase{Subsampling::gray, false, false}, RoiCase{Subsampling::gray, true, true}),
    case_name);

TEST(RoiDecode, CmykWindowEqualsFullDecodeCropped) {
  Image four(70, 90, 4);
  for (int i = 0; i < 70 * 90 * 4; ++i)
    four.data()[i] = static_cast<std::uint8_t>(60 + (i * 7 + i / 360) % 190);
  expect_roi_equals_full_decode_cropped(testing::encode_cmyk_jpeg(four.view()), false);
}

TEST(RoiDecode, WindowInAnUprightImageEqualsTheUprightFullDecodeCropped) {
  const auto plain = jpeg_of(61, 90, Subsampling::s420);
  for (int orientation = 1; orientation <= 8; ++orientation) {
    SCOPED_TRACE("orientation " + std::to_string(orientation));
    const auto jpeg = testing::with_exif_orientation(plain, orientation);
    DecodeOptions options;
    options.apply_exif_orientation = true;
    for (int denom : {1, 2}) {
      JpegDecoder decoder;
      decoder.open(jpeg, options);
      Image full(decoder.shape(denom));
      decoder.read(full.view(), denom);
      for (const Rect& window : windows_for(full.width(), full.height())) {
        decoder.open(jpeg, options);
        Image roi(window.height, window.width, 3);
        decoder.read_region(window, roi.view(), denom);
        ASSERT_EQ(testing::max_abs_diff(roi.view(), testing::copy_of(full.view(), window).view()), 0)
            << describe(window) << " at 1/" << denom;
      }
    }
  }
}

// libjpeg-turbo before 3.1.2 corrupts memory in jpeg_skip_scanlines when one decompressor switches between
// merged and normal upsampling (fast vs accurate, 4:2:0 vs 4:4:4, scale changes). Under ASan this test
// fails loudly if the decoder ever reuses a decompressor across such changes.
TEST(RoiDecode, ManyWindowsWithChangingScalesAndSettingsInARowStayExact) {
  const std::vector<std::vector<std::uint8_t>> jpegs = {
      jpeg_of(120, 150, Subsampling::s420), jpeg_of(97, 131, Subsampling::s444),
      jpeg_of(88, 72, Subsampling::s422), jpeg_of(64, 100, Subsampling::gray),
      jpeg_of(50, 81, Subsampling::s420)};  // 81 = 5 * 16 + 1: a last iMCU column 1 pixel wide
  // The expected pixels: full decodes by a fresh decoder each time.
  JpegDecoder decoder;
  Rng rng(7);
  for (int i = 0; i < 160; ++i) {
    const auto& jpeg = jpegs[rng.below(jpegs.size())];
    DecodeOptions options;
    options.fast = rng.bernoulli(0.5);
    const int denom = 1 << rng.below(4);
    Image full;
    {
      JpegDecoder fresh;
      fresh.open(jpeg, options);
      full.reshape(fresh.shape(denom));
      fresh.read(full.view(), denom);
    }
    const int w = 1 + static_cast<int>(rng.below(full.width()));
    const int h = 1 + static_cast<int>(rng.below(full.height()));
    const Rect window{static_cast<int>(rng.below(full.width() - w + 1)),
                      static_cast<int>(rng.below(full.height() - h + 1)), w, h};
    decoder.open(jpeg, options);
    const ConstImageView roi = decoder.read_region_view(window, denom);
    ASSERT_EQ(testing::max_abs_diff(roi, testing::copy_of(full.view(), window).view()), 0)
        << "step " << i << " window " << describe(window) << " scale 1/" << denom << " fast " << options.fast;
  }
}

}  // namespace
}  // namespace conveyor::ops
