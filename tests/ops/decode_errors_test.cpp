// Bad input: every broken buffer gives a DecodeError that names the reason; nothing crashes, hangs or exits.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/random.h"
#include "jpeg_fixtures.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor::ops {
namespace {

using Bytes = std::vector<std::uint8_t>;

// Decodes the whole image; returns the failure, or nothing when it decoded.
std::optional<DecodeFailure> failure_of(const Bytes& jpeg, DecodeOptions options = {}) {
  try {
    Image out;
    decode_jpeg(jpeg, out, options);
    return std::nullopt;
  } catch (const DecodeError& error) {
    EXPECT_NE(std::string(error.what()), "") << "a DecodeError must explain itself";
    return error.failure();
  }
}

Bytes photo(bool progressive = false, int height = 96, int width = 128) {
  return testing::make_jpeg(height, width, 3, 21, 90, progressive);
}

Bytes first_bytes(const Bytes& jpeg, std::size_t count) { return Bytes(jpeg.begin(), jpeg.begin() + count); }

TEST(DecodeErrors, ZeroBytesAreEmpty) { EXPECT_EQ(failure_of({}), DecodeFailure::empty); }

TEST(DecodeErrors, OtherFormatsAreNotJpeg) {
  EXPECT_EQ(failure_of({0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}), DecodeFailure::not_jpeg);
  EXPECT_EQ(failure_of({'G', 'I', 'F', '8', '9', 'a'}), DecodeFailure::not_jpeg);
  EXPECT_EQ(failure_of({0xFF}), DecodeFailure::not_jpeg);
  EXPECT_EQ(failure_of({'h', 'e', 'l', 'l', 'o'}), DecodeFailure::not_jpeg);
  EXPECT_THROW(read_jpeg_header(Bytes{0x00, 0x01, 0x02}), DecodeError);
}

TEST(DecodeErrors, DataCutAnywhereBeforeTheLastRowIsTruncated) {
  for (const bool progressive : {false, true}) {
    const Bytes jpeg = photo(progressive);
    const std::size_t scan = testing::scan_data_offset(jpeg);
    for (const std::size_t keep : {std::size_t{2}, std::size_t{20}, scan - 3, scan, scan + 10,
                                   jpeg.size() / 2, jpeg.size() * 9 / 10, jpeg.size() - 40}) {
      EXPECT_EQ(failure_of(first_bytes(jpeg, keep)), DecodeFailure::truncated)
          << (progressive ? "progressive" : "baseline") << ", kept " << keep << " of " << jpeg.size()
          << " bytes";
    }
  }
}

TEST(DecodeErrors, AMissingEndOfImageMarkerOnlyWarns) {
  const Bytes jpeg = photo();
  const Bytes cut = first_bytes(jpeg, jpeg.size() - 2);  // drop FF D9
  Image out, expected;
  const DecodeResult result = decode_jpeg(cut, out);
  decode_jpeg(jpeg, expected);
  EXPECT_EQ(testing::max_abs_diff(out.view(), expected.view()), 0);
  EXPECT_EQ(result.warnings, 1);
}

TEST(DecodeErrors, AWindowAboveTheCutOfATruncatedFileStillDecodes) {
  // Only the rows a window needs are read, so a window in the intact top part is fine.
  const Bytes jpeg = photo(false, 256, 128);
  const Bytes cut = first_bytes(jpeg, jpeg.size() * 3 / 4);
  Image top(32, 64, 3);
  decode_jpeg_region(cut, {10, 8, 64, 32}, top.view());
  const Image full = decode_jpeg(jpeg);
  EXPECT_EQ(testing::max_abs_diff(top.view(), testing::copy_of(full.view(), {10, 8, 64, 32}).view()), 0);
  Image bottom(32, 64, 3);
  EXPECT_THROW(decode_jpeg_region(cut, {10, 220, 64, 32}, bottom.view()), DecodeError);
}

TEST(DecodeErrors, ExtraneousBytesAreCountedAsWarningsOrAnErrorWhenAsked) {
  Bytes jpeg = photo();
  const Bytes clean = jpeg;
  // Two stray bytes between the first two segments: libjpeg warns and skips them.
  const std::size_t second = 4 + (static_cast<std::size_t>(jpeg[4]) << 8 | jpeg[5]);
  jpeg.insert(jpeg.begin() + static_cast<std::ptrdiff_t>(second), {0x00, 0x00});
  Image out, expected;
  const DecodeResult result = decode_jpeg(jpeg, out);
  decode_jpeg(clean, expected);
  EXPECT_EQ(result.warnings, 1);
  EXPECT_EQ(testing::max_abs_diff(out.view(), expected.view()), 0);
  DecodeOptions strict;
  strict.warnings_are_errors = true;
  EXPECT_EQ(failure_of(jpeg, strict), DecodeFailure::warnings);
}

TEST(DecodeErrors, GarbageInTheScanDataWarnsAndIsAnErrorWhenAsked) {
  Bytes jpeg = photo();
  const std::size_t scan = testing::scan_data_offset(jpeg);
  for (std::size_t i = scan + 100; i < scan + 140; ++i) jpeg[i] = 0xFF;  // a burst of fill bytes
  jpeg[scan + 140] = 0xD3;                                               // and a stray restart marker
  Image out;
  EXPECT_GT(decode_jpeg(jpeg, out).warnings, 0);
  DecodeOptions strict;
  strict.warnings_are_errors = true;
  EXPECT_EQ(failure_of(jpeg, strict), DecodeFailure::warnings);
}

TEST(DecodeErrors, ImpossibleHeadersAreCorrupt) {
  EXPECT_EQ(failure_of(testing::with_declared_size(photo(), 128, 0)), DecodeFailure::corrupt);
  Bytes bad_tables = photo();
  const std::size_t scan = testing::scan_data_offset(bad_tables);
  // Point the scan's first component at Huffman table 3, which was never defined.
  bad_tables[scan - 4 - 4] = 0x33;
  EXPECT_EQ(failure_of(bad_tables), DecodeFailure::corrupt);
}

TEST(DecodeErrors, TwelveBitAndLosslessFilesAreUnsupported) {
  EXPECT_EQ(failure_of(testing::with_frame(photo(), 0xC1, 12)), DecodeFailure::unsupported);
  EXPECT_EQ(failure_of(testing::with_frame(photo(), 0xC3, 8)), DecodeFailure::unsupported);
}

TEST(DecodeErrors, ImagesOverThePixelLimitAreRefusedBeforeDecoding) {
  const Bytes jpeg = photo(false, 96, 128);
  DecodeOptions tight;
  tight.max_pixels = std::size_t{96} * 128 - 1;
  EXPECT_EQ(failure_of(jpeg, tight), DecodeFailure::too_large);
  tight.max_pixels = std::size_t{96} * 128;
  EXPECT_EQ(failure_of(jpeg, tight), std::nullopt);
  // A tiny file whose header claims 65000 x 65000 pixels: refused by the default limit at once.
  EXPECT_EQ(failure_of(testing::with_declared_size(jpeg, 65000, 65000)), DecodeFailure::too_large);
  // The header alone can still be read.
  EXPECT_EQ(read_jpeg_header(testing::with_declared_size(jpeg, 65000, 65000)).width, 65000);
}

TEST(DecodeErrors, AbsurdlyManyProgressiveScansAreRefused) {
  const Image picture = testing::make_picture(16, 16, 1, 2);
  testing::LibjpegEncoding many;
  many.scans_per_coefficient = 9;  // 1 + 63 * 9 = 568 scans, over the limit of 500
  EXPECT_EQ(failure_of(testing::encode_with_libjpeg(picture.view(), many)), DecodeFailure::corrupt);
  testing::LibjpegEncoding some;
  some.scans_per_coefficient = 2;  // 127 scans: unusual but fine
  EXPECT_EQ(failure_of(testing::encode_with_libjpeg(picture.view(), some)), std::nullopt);
}

// Random damage to real files: flipped bytes, cut tails, inserted and deleted runs. Whatever happens, the
// decoder returns pixels or throws DecodeError. ASan and UBSan builds run this too.
TEST(DecodeErrors, RandomlyDamagedFilesNeverCrashOrHang) {
  const testing::Watchdog watchdog(std::chrono::seconds(60), "decoding damaged JPEGs");
  const std::vector<Bytes> originals = {photo(false, 48, 64), photo(true, 48, 64),
                                        testing::make_jpeg(40, 40, 1, 3, 80, false)};
  Rng rng(2024);
  int decoded = 0, refused = 0;
  JpegDecoder decoder;
  for (int i = 0; i < 600; ++i) {
    Bytes jpeg = originals[i % originals.size()];
    const int edits = 1 + static_cast<int>(rng.below(4));
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng.below(jpeg.size());
      switch (rng.below(4)) {
        case 0:
          jpeg[at] = static_cast<std::uint8_t>(rng.next());
          break;
        case 1:
          jpeg.resize(std::max<std::size_t>(at, 1));
          break;
        case 2:
          jpeg.insert(jpeg.begin() + static_cast<std::ptrdiff_t>(at), rng.below(64), 0xFF);
          break;
        default:
          jpeg.erase(jpeg.begin() + static_cast<std::ptrdiff_t>(at),
                     jpeg.begin() + static_cast<std::ptrdiff_t>(std::min(jpeg.size(), at + rng.below(32))));
      }
    }
    try {
      DecodeOptions options;
      options.fast = rng.bernoulli(0.5);
      options.max_pixels = 4'000'000;
      const JpegHeader& header = decoder.open(jpeg, options);
      if (rng.bernoulli(0.5) && header.width > 4 && header.height > 4) {
        decoder.read_region_view({1, 1, header.width / 2, header.height / 2}, 1);
      } else {
        const int denom = 1 << rng.below(4);
        Image out(decoder.shape(denom));
        decoder.read(out.view(), denom);
      }
      ++decoded;
    } catch (const DecodeError&) {
      ++refused;
    }
  }
  EXPECT_EQ(decoded + refused, 600);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace conveyor::ops
