// Regressions found by fuzzing (fuzz/regressions/ holds the inputs), each as a specification.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/random.h"
#include "jpeg_variants.h"
#include "support/test_images.h"

namespace conveyor {
namespace {

// A progressive file without its refinement scans is valid; libjpeg completes the missing coefficients
// and, by default, smooths the blocks using their neighbours' DC values. libjpeg-turbo 2.1's smoothing
// sees other neighbours when it decodes a window (cropped columns, skipped rows) than when it decodes the
// whole image, so a window came out different from the crop of the whole decode (fuzz input
// crash-575ac935...: a 40x40 gray progressive file, the last row off by 2 levels). The decoder turns
// block smoothing off, which makes both agree (and changes nothing for complete files, which libjpeg
// never smooths).
TEST(FuzzRegressions, AWindowOfAnIncompleteProgressiveFileEqualsTheCropOfTheWholeDecode) {
  Rng rng(575);
  for (const int channels : {1, 3}) {
    for (const auto& [height, width] : {std::pair{40, 40}, std::pair{57, 83}, std::pair{96, 128}}) {
      const testing::Bytes jpeg = testing::make_incomplete_progressive_jpeg(height, width, channels, 3);
      for (const int denom : {1, 2, 4, 8}) {
        ops::DecodeOptions options;
        options.color = ops::ColorMode::keep;
        ops::JpegDecoder decoder;
        decoder.open(jpeg, options);
        Image whole(decoder.shape(denom));
        ASSERT_EQ(decoder.read(whole.view(), denom).warnings, 0);
        for (int trial = 0; trial < 20; ++trial) {
          const int x = static_cast<int>(rng.below(static_cast<std::uint64_t>(whole.width())));
          const int y = static_cast<int>(rng.below(static_cast<std::uint64_t>(whole.height())));
          const int w = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(whole.width() - x)));
          const int h = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(whole.height() - y)));
          Image window(h, w, whole.channels());
          decoder.open(jpeg, options);
          decoder.read_region({x, y, w, h}, window.view(), denom);
          Image crop(h, w, whole.channels());
          for (int row = 0; row < h; ++row)
            std::copy_n(whole.view().at(y + row, x), static_cast<std::size_t>(w) * whole.channels(),
                        crop.view().row(row));
          ASSERT_EQ(testing::max_abs_diff(window.view(), crop.view()), 0)
              << height << "x" << width << "x" << channels << " at 1/" << denom << ", window " << w << "x"
              << h << "+" << x << "+" << y;
        }
      }
    }
  }
}

}  // namespace
}  // namespace conveyor
