// What a prepared data set stores (issue 36): JPEGs re-encoded by encode_jpeg, and images stored decoded as
// binary PPM/PGM (raw_image.h), which the decode ops read as they read a JPEG.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "conveyor/sample.h"
#include "support/test_images.h"

namespace conveyor::ops {
namespace {

using testing::make_picture;

TEST(EncodeJpeg, WhatItEncodesDecodesBackCloseAndAtTheSizeGiven) {
  const Image picture = make_picture(75, 100, 3, 8);
  const std::vector<std::uint8_t> high = encode_jpeg(picture.view(), {.quality = 95});
  const std::vector<std::uint8_t> low = encode_jpeg(picture.view(), {.quality = 40});
  EXPECT_LT(low.size(), high.size()) << "a lower quality must take fewer bytes";
  const Image back = decode_jpeg(high);
  ASSERT_EQ(back.shape(), picture.shape());
  EXPECT_LT(testing::mean_abs_diff(back.view(), picture.view()), 6.0);  // 4:2:0 loses chroma detail
  EXPECT_GT(testing::mean_abs_diff(decode_jpeg(low).view(), picture.view()),
            testing::mean_abs_diff(back.view(), picture.view()));
}

TEST(EncodeJpeg, SubsamplingAndProgressiveAreWhatTheHeaderSays) {
  const Image picture = make_picture(64, 96, 3, 9);
  JpegDecoder decoder;
  const std::vector<std::uint8_t> progressive = encode_jpeg(picture.view(), {.progressive = true});
  EXPECT_TRUE(decoder.open(progressive).progressive);
  const std::vector<std::uint8_t> baseline =
      encode_jpeg(picture.view(), {.subsampling = ChromaSubsampling::s411});
  EXPECT_FALSE(decoder.open(baseline).progressive);
  EXPECT_EQ(decode_jpeg(baseline).shape(), picture.shape()) << "4:1:1 decodes as any JPEG";
  const Image gray = make_picture(32, 32, 1, 3);
  EXPECT_EQ(decoder.open(encode_jpeg(gray.view())).components, 1);
}

TEST(EncodeJpeg, RefusesWhatItCannotEncode) {
  const Image four = make_picture(8, 8, 4, 1);
  EXPECT_THROW(encode_jpeg(four.view()), InvalidArgument);
  EXPECT_THROW(encode_jpeg(ConstImageView{}), InvalidArgument);
  const Image picture = make_picture(8, 8, 3, 1);
  EXPECT_THROW(encode_jpeg(picture.view(), {.quality = 0}), InvalidArgument);
  EXPECT_THROW(encode_jpeg(picture.view(), {.quality = 101}), InvalidArgument);
}

TEST(RawImage, WhatIsEncodedReadsBackByteForByte) {
  for (const int channels : {1, 3}) {
    const Image picture = make_picture(21, 34, channels, 5);
    const std::vector<std::uint8_t> bytes = encode_raw_image(picture.view());
    ASSERT_TRUE(is_raw_image(bytes));
    const ConstImageView back = read_raw_image(bytes, {.color = ColorMode::keep});
    ASSERT_EQ(back.shape(), picture.shape());
    EXPECT_EQ(testing::max_abs_diff(back, picture.view()), 0) << channels << " channels";
  }
}

TEST(RawImage, ItsHeaderMayCarryCommentsAndAnyWhiteSpace) {
  std::string text = "P6 # a comment\n 2\t1 # another\n255\n";
  text += std::string("\x01\x02\x03\x04\x05\x06", 6);
  const std::vector<std::uint8_t> bytes(text.begin(), text.end());
  const ConstImageView image = read_raw_image(bytes);
  EXPECT_EQ(image.shape(), (ImageShape{1, 2, 3}));
  EXPECT_EQ(image.row(0)[5], 6);
}

DecodeFailure failure_of(const std::string& text, const DecodeOptions& options = {}) {
  const std::vector<std::uint8_t> bytes(text.begin(), text.end());
  try {
    read_raw_image(bytes, options);
  } catch (const DecodeError& error) {
    return error.failure();
  }
  ADD_FAILURE() << "read: " << text.substr(0, 20);
  return DecodeFailure::empty;
}

TEST(RawImage, MalformedTruncatedOversizedAndMismatchedImagesAreTypedErrors) {
  EXPECT_EQ(failure_of(""), DecodeFailure::empty);
  EXPECT_EQ(failure_of("P6\n2 x\n255\n"), DecodeFailure::corrupt);
  EXPECT_EQ(failure_of("P6\n2 1\n65535\n" + std::string(12, '\0')), DecodeFailure::corrupt) << "16-bit";
  EXPECT_EQ(failure_of("P6\n0 1\n255\n"), DecodeFailure::corrupt);
  EXPECT_EQ(failure_of("P6\n2 1\n255\n" + std::string(5, '\0')), DecodeFailure::truncated);
  EXPECT_EQ(failure_of("P6\n2 1\n255"), DecodeFailure::truncated);
  EXPECT_EQ(failure_of("P6\n4 4\n255\n" + std::string(48, '\0'), {.max_pixels = 15}),
            DecodeFailure::too_large);
  EXPECT_EQ(failure_of("P6\n1 1\n255\n" + std::string(3, '\0'), {.color = ColorMode::gray}),
            DecodeFailure::unsupported);
  EXPECT_EQ(failure_of("P5\n1 1\n255\n" + std::string(1, '\0'), {.color = ColorMode::rgb}),
            DecodeFailure::unsupported);
}

TEST(RawImage, TheDecodeOpsReadItAsTheyReadAJpeg) {
  const Image picture = make_picture(60, 80, 3, 4);
  Sample sample;
  sample.encoded = encode_raw_image(picture.view());
  sample.seed = 1234;
  const SampleOp crop = decode_random_resized_crop(24);
  crop.apply(sample);
  ASSERT_EQ(sample.image().shape(), (ImageShape{24, 24, 3}));
  // The same window the op draws for a JPEG of that size, resized the same way: only the decoding is gone.
  const Rect window =
      draw_random_resized_crop_window(60, 80, {}, 1234, op_stream(stream::random_resized_crop, 0));
  Image expected(24, 24, 3);
  resize(ConstImageView(picture.view().at(window.y, window.x), ImageShape{window.height, window.width, 3},
                        picture.view().stride),
         expected.view());
  EXPECT_EQ(testing::max_abs_diff(sample.image(), expected.view()), 0);

  Sample whole;
  whole.encoded = sample.encoded;
  decode().apply(whole);
  EXPECT_EQ(testing::max_abs_diff(whole.image(), picture.view()), 0);
  Sample centre;
  centre.encoded = sample.encoded;
  decode_center_crop(32).apply(centre);
  EXPECT_EQ(centre.image().shape(), (ImageShape{32, 32, 3}));
}

}  // namespace
}  // namespace conveyor::ops
