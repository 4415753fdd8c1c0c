// PNG decoding (libspng): images of every colour type into RGB or gray, masks of class ids kept as stored,
// and the same failure rules as JPEG (empty, not a PNG, truncated, corrupt, over the pixel limit).
#include "conveyor/ops/decode_png.h"

#include <gtest/gtest.h>
#include <spng.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops/sample_ops.h"
#include "support/test_images.h"

namespace conveyor::ops {
namespace {

// A PNG of raw rows in any colour type and depth, written with libspng directly (encode_png writes only
// the layouts conveyor itself needs); with a palette for colour type 3.
std::vector<std::uint8_t> raw_png(int width, int height, int depth, int color_type,
                                  const std::vector<std::uint8_t>& rows,
                                  const std::vector<std::array<std::uint8_t, 3>>& palette = {}) {
  spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr ihdr{static_cast<std::uint32_t>(width),
                 static_cast<std::uint32_t>(height),
                 static_cast<std::uint8_t>(depth),
                 static_cast<std::uint8_t>(color_type),
                 0,
                 0,
                 0};
  spng_set_ihdr(ctx, &ihdr);
  if (!palette.empty()) {
    spng_plte plte{};
    plte.n_entries = static_cast<std::uint32_t>(palette.size());
    for (std::size_t i = 0; i < palette.size(); ++i)
      plte.entries[i] = {palette[i][0], palette[i][1], palette[i][2], 255};
    spng_set_plte(ctx, &plte);
  }
  const int error = spng_encode_image(ctx, rows.data(), rows.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  EXPECT_EQ(error, 0) << spng_strerror(error);
  std::size_t size = 0;
  int get_error = 0;
  auto* buffer = static_cast<std::uint8_t*>(spng_get_png_buffer(ctx, &size, &get_error));
  std::vector<std::uint8_t> out(buffer, buffer + size);
  std::free(buffer);  // NOLINT(cppcoreguidelines-no-malloc): libspng's buffer
  spng_ctx_free(ctx);
  return out;
}

DecodeFailure failure_of(const std::vector<std::uint8_t>& png,
                         std::size_t max_pixels = DecodeOptions{}.max_pixels) {
  try {
    decode_png_mask(png, max_pixels);
  } catch (const DecodeError& error) {
    return error.failure();
  }
  ADD_FAILURE() << "decoded";
  return DecodeFailure::empty;
}

TEST(DecodePng, AnRgbImageRoundTripsExactly) {
  const Image picture = testing::make_picture(37, 53, 3, 4);
  const Image back = decode_png(encode_png(picture.view()));
  EXPECT_EQ(back.shape(), picture.shape());
  EXPECT_EQ(testing::max_abs_diff(back.view(), picture.view()), 0);
}

TEST(DecodePng, AGrayImageBecomesRgbOrStaysGrayAsAsked) {
  const Image gray = testing::make_picture(20, 30, 1, 2);
  const std::vector<std::uint8_t> png = encode_png(gray.view());
  const Image rgb = decode_png(png, ColorMode::rgb);
  ASSERT_EQ(rgb.channels(), 3);
  for (int y = 0; y < 20; ++y)
    for (int x = 0; x < 30; ++x)
      for (int c = 0; c < 3; ++c) ASSERT_EQ(rgb.view().at(y, x)[c], gray.view().at(y, x)[0]);
  EXPECT_EQ(testing::max_abs_diff(decode_png(png, ColorMode::keep).view(), gray.view()), 0);
  EXPECT_EQ(testing::max_abs_diff(decode_png(png, ColorMode::gray).view(), gray.view()), 0);
}

TEST(DecodePng, APaletteImageIsExpandedAndAlphaIsDropped) {
  const std::vector<std::array<std::uint8_t, 3>> palette{{10, 20, 30}, {200, 100, 50}};
  const Image rgb = decode_png(raw_png(2, 1, 8, 3, {1, 0}, palette));
  EXPECT_EQ(rgb.view().at(0, 0)[0], 200);
  EXPECT_EQ(rgb.view().at(0, 1)[2], 30);
  const Image rgba = decode_png(raw_png(1, 1, 8, 6, {9, 8, 7, 0}));
  ASSERT_EQ(rgba.channels(), 3);
  EXPECT_EQ(rgba.view().at(0, 0)[0], 9);
  EXPECT_EQ(rgba.view().at(0, 0)[2], 7);
}

TEST(DecodePng, EightAndSixteenBitMasksKeepTheirClassIds) {
  Mask eight({3, 4, MaskType::uint8});
  for (int i = 0; i < 12; ++i) eight.view().data[i] = static_cast<std::uint8_t>(i * 20);
  const Mask eight_back = decode_png_mask(encode_png(std::as_const(eight).view()));
  ASSERT_EQ(eight_back.shape(), eight.shape());
  EXPECT_EQ(std::memcmp(eight_back.view().data, eight.view().data, 12), 0);

  Mask sixteen({2, 3, MaskType::uint16});
  const std::uint16_t values[6] = {0, 1, 255, 256, 1000, 65535};
  std::memcpy(sixteen.view().data, values, sizeof values);
  const Mask back = decode_png_mask(encode_png(std::as_const(sixteen).view()));
  ASSERT_EQ(back.shape(), sixteen.shape());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back.view().at(i / 3, i % 3), values[i]);
}

TEST(DecodePng, PaletteMasksAreIndicesAndLowBitDepthsAreUnscaled) {
  // VOC stores its masks as palette PNGs: the index is the class, whatever colour it shows as.
  const std::vector<std::array<std::uint8_t, 3>> palette(256, {1, 2, 3});
  const Mask voc = decode_png_mask(raw_png(3, 1, 8, 3, {0, 15, 255}, palette));
  EXPECT_EQ(voc.view().at(0, 1), 15u);
  EXPECT_EQ(voc.view().at(0, 2), 255u);
  // 4-bit gray: two ids a byte, most significant first.
  const Mask four = decode_png_mask(raw_png(3, 1, 4, 0, {0x3A, 0x70}));
  EXPECT_EQ(four.shape().type, MaskType::uint8);
  EXPECT_EQ(four.view().at(0, 0), 3u);
  EXPECT_EQ(four.view().at(0, 1), 10u);
  EXPECT_EQ(four.view().at(0, 2), 7u);
}

TEST(DecodePng, AColourPngIsNoMask) {
  const Image picture = testing::make_picture(4, 4, 3, 1);
  EXPECT_EQ(failure_of(encode_png(picture.view())), DecodeFailure::unsupported);
}

TEST(DecodePng, BadBytesFailWithTheirReason) {
  EXPECT_EQ(failure_of({}), DecodeFailure::empty);
  EXPECT_EQ(failure_of(testing::make_jpeg(8, 8)), DecodeFailure::not_png);
  Mask mask({64, 64, MaskType::uint8});
  for (int i = 0; i < 64 * 64; ++i) mask.view().data[i] = static_cast<std::uint8_t>((i * 7919) % 251);
  std::vector<std::uint8_t> png = encode_png(std::as_const(mask).view());
  EXPECT_EQ(failure_of(png, 64 * 63), DecodeFailure::too_large);
  std::vector<std::uint8_t> cut(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(png.size() / 2));
  EXPECT_EQ(failure_of(cut), DecodeFailure::truncated);
  std::vector<std::uint8_t> damaged = png;
  damaged[png.size() / 2] ^= 0x55;  // inside the image data: its CRC no longer matches
  EXPECT_EQ(failure_of(damaged), DecodeFailure::corrupt);
}

TEST(DecodePng, TheDecodeOpsTakePngImages) {
  const Image picture = testing::make_picture(40, 60, 3, 9);
  Sample sample;
  sample.encoded = encode_png(picture.view());
  decode().apply(sample);
  EXPECT_EQ(testing::max_abs_diff(sample.image(), picture.view()), 0);
  Sample cropped;
  cropped.encoded = sample.encoded;
  decode_center_crop(20).apply(cropped);
  EXPECT_EQ(cropped.image().shape(), (ImageShape{20, 20, 3}));
  Sample random;
  random.encoded = sample.encoded;
  decode_random_resized_crop(16).apply(random);
  EXPECT_EQ(random.image().shape(), (ImageShape{16, 16, 3}));
}

TEST(DecodePng, MemoryEstimateCoversTheOutputAndIsKnownFromTheHeader) {
  const Image picture = testing::make_picture(100, 80, 3, 1);
  const std::vector<std::uint8_t> png = encode_png(picture.view());
  PngDecoder decoder;
  decoder.open(png);
  EXPECT_GE(decoder.memory_estimate(), picture.shape().bytes());
  EXPECT_EQ(detect_image_format(png), ImageFormat::png);
  EXPECT_EQ(detect_image_format(testing::make_jpeg(8, 8)), ImageFormat::jpeg);
}

}  // namespace
}  // namespace conveyor::ops
