// decode_jpeg: whole-image decode against TurboJPEG's tjDecompress2 as the reference.
#include "conveyor/ops/decode_jpeg.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "conveyor/error.h"
#include "jpeg_fixtures.h"
#include "support/test_images.h"

namespace conveyor::ops {
namespace {

using testing::Subsampling;

std::string name_of(Subsampling s) {
  switch (s) {
    case Subsampling::s444:
      return "444";
    case Subsampling::s422:
      return "422";
    case Subsampling::s420:
      return "420";
    case Subsampling::gray:
      return "gray";
  }
  return "?";
}

std::vector<std::uint8_t> jpeg_of(int height, int width, Subsampling subsampling, bool progressive = false,
                                  std::uint64_t seed = 3) {
  const int channels = subsampling == Subsampling::gray ? 1 : 3;
  const Image picture = testing::make_picture(height, width, channels, seed);
  return testing::encode_jpeg(picture.view(), 90, subsampling, progressive);
}

class DecodeMatchesTurboJpeg : public ::testing::TestWithParam<std::tuple<Subsampling, bool, int, int>> {};

TEST_P(DecodeMatchesTurboJpeg, BitExactlyAtEveryPowerOfTwoScale) {
  const auto [subsampling, progressive, height, width] = GetParam();
  const auto jpeg = jpeg_of(height, width, subsampling, progressive);
  const int channels = subsampling == Subsampling::gray ? 1 : 3;
  JpegDecoder decoder;
  for (int denom : {1, 2, 4, 8}) {
    SCOPED_TRACE("scale 1/" + std::to_string(denom));
    DecodeOptions options;
    options.color = ColorMode::keep;
    decoder.open(jpeg, options);
    Image out(decoder.shape(denom));
    const DecodeResult result = decoder.read(out.view(), denom);
    const Image reference = testing::tj_decode(jpeg, channels, denom);
    ASSERT_EQ(out.shape(), reference.shape());
    EXPECT_EQ(testing::max_abs_diff(out.view(), reference.view()), 0);
    EXPECT_EQ(result.warnings, 0);
    EXPECT_EQ(result.scale_denom, denom);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DecodeMatchesTurboJpeg,
                         ::testing::Combine(::testing::Values(Subsampling::s444, Subsampling::s422,
                                                              Subsampling::s420, Subsampling::gray),
                                            ::testing::Bool(), ::testing::Values(61, 128),
                                            ::testing::Values(97, 1)),
                         [](const auto& info) {
                           return name_of(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_progressive_" : "_baseline_") +
                                  std::to_string(std::get<2>(info.param)) + "x" +
                                  std::to_string(std::get<3>(info.param));
                         });

TEST(DecodeJpeg, FastModeMatchesTurboJpegFastFlagsAndStaysCloseToAccurate) {
  const auto jpeg = jpeg_of(120, 161, Subsampling::s420);
  DecodeOptions fast;
  fast.fast = true;
  const Image quick = decode_jpeg(jpeg, fast);
  const Image accurate = decode_jpeg(jpeg);
  EXPECT_EQ(testing::max_abs_diff(quick.view(), testing::tj_decode(jpeg, 3, 1, true).view()), 0);
  const double difference = testing::mean_abs_diff(quick.view(), accurate.view());
  EXPECT_GT(difference, 0.0);
  EXPECT_LT(difference, 4.0);  // on photos about 0.6 (docs/libjpeg-turbo.md); the test picture has more fine texture
}

TEST(DecodeJpeg, GrayFileGivesOneChannelWithKeepAndReplicatedRgbWithRgb) {
  const auto jpeg = jpeg_of(40, 33, Subsampling::gray);
  DecodeOptions keep;
  keep.color = ColorMode::keep;
  const Image one = decode_jpeg(jpeg, keep);
  const Image three = decode_jpeg(jpeg);
  ASSERT_EQ(one.shape(), (ImageShape{40, 33, 1}));
  ASSERT_EQ(three.shape(), (ImageShape{40, 33, 3}));
  for (std::size_t i = 0; i < 40 * 33; ++i) {
    ASSERT_EQ(three.data()[3 * i], one.data()[i]);
    ASSERT_EQ(three.data()[3 * i + 1], one.data()[i]);
    ASSERT_EQ(three.data()[3 * i + 2], one.data()[i]);
  }
}

TEST(DecodeJpeg, ColorFileDecodedAsGrayMatchesTurboJpegGray) {
  const auto jpeg = jpeg_of(50, 70, Subsampling::s420);
  DecodeOptions gray;
  gray.color = ColorMode::gray;
  const Image out = decode_jpeg(jpeg, gray);
  EXPECT_EQ(testing::max_abs_diff(out.view(), testing::tj_decode(jpeg, 1).view()), 0);
}

// The reference for CMYK: TurboJPEG's CMYK output converted with the documented formula.
Image cmyk_reference(const std::vector<std::uint8_t>& jpeg, bool inverted) {
  const Image cmyk = testing::tj_decode(jpeg, 4);
  Image rgb(cmyk.height(), cmyk.width(), 3);
  for (int i = 0; i < cmyk.height() * cmyk.width(); ++i) {
    const auto value = [&](int c) {
      return inverted ? int(cmyk.data()[4 * i + c]) : 255 - cmyk.data()[4 * i + c];
    };
    for (int c = 0; c < 3; ++c)
      rgb.data()[3 * i + c] = static_cast<std::uint8_t>((value(c) * value(3) + 127) / 255);
  }
  return rgb;
}

TEST(DecodeJpeg, AdobeYcckIsConvertedAsInvertedCmyk) {
  const Image cmyk = testing::make_picture(45, 62, 3, 9);  // three channels, widened to four below
  Image four(45, 62, 4);
  for (int i = 0; i < 45 * 62; ++i) {
    for (int c = 0; c < 3; ++c) four.data()[4 * i + c] = cmyk.data()[3 * i + c];
    four.data()[4 * i + 3] = static_cast<std::uint8_t>(200 + i % 56);
  }
  const auto jpeg = testing::encode_cmyk_jpeg(four.view());
  const JpegHeader header = read_jpeg_header(jpeg);
  EXPECT_EQ(header.color_space, JpegColorSpace::ycck);
  EXPECT_EQ(header.components, 4);
  const Image out = decode_jpeg(jpeg);
  EXPECT_EQ(testing::max_abs_diff(out.view(), cmyk_reference(jpeg, true).view()), 0);
}

TEST(DecodeJpeg, PlainCmykWithoutAdobeMarkerIsConvertedAsInkAmounts) {
  Image four(30, 41, 4);
  for (int i = 0; i < 30 * 41 * 4; ++i) four.data()[i] = static_cast<std::uint8_t>((i * 37) % 256);
  testing::LibjpegEncoding how;
  how.plain_cmyk_without_adobe = true;
  const auto jpeg = testing::encode_with_libjpeg(four.view(), how);
  EXPECT_EQ(read_jpeg_header(jpeg).color_space, JpegColorSpace::cmyk);
  const Image out = decode_jpeg(jpeg);
  EXPECT_EQ(testing::max_abs_diff(out.view(), cmyk_reference(jpeg, false).view()), 0);
}

TEST(DecodeJpeg, CmykDecodedAsGrayIsTheLumaOfItsRgb) {
  Image four(20, 23, 4);
  for (int i = 0; i < 20 * 23 * 4; ++i) four.data()[i] = static_cast<std::uint8_t>(100 + (i * 13) % 150);
  const auto jpeg = testing::encode_cmyk_jpeg(four.view());
  DecodeOptions gray;
  gray.color = ColorMode::gray;
  const Image out = decode_jpeg(jpeg, gray);
  const Image rgb = cmyk_reference(jpeg, true);
  ASSERT_EQ(out.channels(), 1);
  for (std::size_t i = 0; i < 20 * 23; ++i) {
    const int r = rgb.data()[3 * i], g = rgb.data()[3 * i + 1], b = rgb.data()[3 * i + 2];
    ASSERT_NEAR(out.data()[i], 0.299 * r + 0.587 * g + 0.114 * b, 0.51);
  }
}

TEST(DecodeJpeg, HeaderReportsSizeColourSpaceAndCoding) {
  const auto progressive = jpeg_of(37, 55, Subsampling::s420, true);
  JpegHeader header = read_jpeg_header(progressive);
  EXPECT_EQ(header.width, 55);
  EXPECT_EQ(header.height, 37);
  EXPECT_EQ(header.components, 3);
  EXPECT_EQ(header.color_space, JpegColorSpace::ycbcr);
  EXPECT_TRUE(header.progressive);
  EXPECT_FALSE(header.arithmetic);
  header = read_jpeg_header(jpeg_of(8, 9, Subsampling::gray));
  EXPECT_EQ(header.components, 1);
  EXPECT_EQ(header.color_space, JpegColorSpace::gray);
  EXPECT_FALSE(header.progressive);
}

TEST(DecodeJpeg, ArithmeticCodedFileDecodesToTheSamePixelsAsHuffman) {
  const Image picture = testing::make_picture(48, 64, 3, 5);
  testing::LibjpegEncoding arithmetic;
  arithmetic.arithmetic = true;
  const auto coded = testing::encode_with_libjpeg(picture.view(), arithmetic);
  const auto huffman = testing::encode_with_libjpeg(picture.view(), {});
  EXPECT_TRUE(read_jpeg_header(coded).arithmetic);
  EXPECT_EQ(testing::max_abs_diff(decode_jpeg(coded).view(), decode_jpeg(huffman).view()), 0);
}

TEST(DecodeJpeg, WritesIntoAStridedViewAndLeavesThePaddingAlone) {
  const auto jpeg = jpeg_of(21, 19, Subsampling::s420);
  const std::ptrdiff_t stride = 19 * 3 + 7;
  std::vector<std::uint8_t> memory(21 * stride, 0xAB);
  const ImageView out(memory.data(), {21, 19, 3}, stride);
  decode_jpeg(jpeg, out);
  const Image reference = testing::tj_decode(jpeg, 3);
  EXPECT_EQ(testing::max_abs_diff(out, reference.view()), 0);
  for (int y = 0; y < 21; ++y)
    for (int x = 19 * 3; x < stride; ++x) ASSERT_EQ(memory[y * stride + x], 0xAB);
}

TEST(DecodeJpeg, OneDecoderServesImagesOfDifferentSizesAndKinds) {
  JpegDecoder decoder;
  for (int i = 0; i < 12; ++i) {
    const Subsampling subsampling = i % 4 == 0 ? Subsampling::gray
                                    : i % 2    ? Subsampling::s420
                                               : Subsampling::s444;
    const auto jpeg = jpeg_of(30 + 17 * i, 90 - 5 * i, subsampling, i % 3 == 0, i);
    decoder.open(jpeg);
    Image out(decoder.shape());
    decoder.read(out.view());
    EXPECT_EQ(testing::max_abs_diff(out.view(), testing::tj_decode(jpeg, 3).view()), 0) << "image " << i;
  }
}

TEST(DecodeJpeg, MisuseIsAnInvalidArgument) {
  const auto jpeg = jpeg_of(16, 16, Subsampling::s420);
  JpegDecoder decoder;
  Image out(16, 16, 3);
  EXPECT_THROW(decoder.read(out.view()), InvalidArgument);  // not opened
  decoder.open(jpeg);
  Image wrong(16, 15, 3);
  EXPECT_THROW(decoder.read(wrong.view()), InvalidArgument);
  decoder.open(jpeg);
  EXPECT_THROW(decoder.read(out.view(), 3), InvalidArgument);  // 3/8 is not offered
  decoder.open(jpeg);
  Image region(4, 4, 3);
  EXPECT_THROW(decoder.read_region({14, 0, 4, 4}, region.view()), InvalidArgument);  // past the right edge
  decoder.open(jpeg);
  decoder.read(out.view());
  EXPECT_THROW(decoder.read(out.view()), InvalidArgument);  // one read per open
}

TEST(DctScale, PicksTheLargestPowerOfTwoThatStillCoversTheTarget) {
  EXPECT_EQ(choose_dct_scale(500, 375, 224, 224), 1);
  EXPECT_EQ(choose_dct_scale(448, 448, 224, 224), 2);
  EXPECT_EQ(choose_dct_scale(447, 448, 224, 224), 1);
  EXPECT_EQ(choose_dct_scale(1000, 900, 224, 224), 4);
  EXPECT_EQ(choose_dct_scale(1792, 1792, 224, 224), 8);
  EXPECT_EQ(choose_dct_scale(8000, 8000, 224, 224), 8);  // never beyond 1/8
  EXPECT_EQ(choose_dct_scale(100, 100, 224, 224), 1);    // upscaling: decode everything
  EXPECT_EQ(choose_dct_scale(896, 300, 224, 75), 4);
}

}  // namespace
}  // namespace conveyor::ops
