// resize: OpenCV's bilinear and area against plain-loop definitions.
#include "conveyor/ops/resize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "conveyor/error.h"
#include "support/test_images.h"

namespace conveyor::ops {
namespace {

// Bilinear with half-pixel centres, edges clamped: the definition cv::INTER_LINEAR implements in 11-bit
// fixed point.
Image reference_bilinear(ConstImageView image, int height, int width) {
  Image out(height, width, image.channels);
  const double sy = static_cast<double>(image.height) / height, sx = static_cast<double>(image.width) / width;
  for (int y = 0; y < height; ++y) {
    const double fy = std::max(0.0, (y + 0.5) * sy - 0.5);
    const int y0 = std::min(static_cast<int>(fy), image.height - 1), y1 = std::min(y0 + 1, image.height - 1);
    const double wy = fy - y0;
    for (int x = 0; x < width; ++x) {
      const double fx = std::max(0.0, (x + 0.5) * sx - 0.5);
      const int x0 = std::min(static_cast<int>(fx), image.width - 1), x1 = std::min(x0 + 1, image.width - 1);
      const double wx = fx - x0;
      for (int c = 0; c < image.channels; ++c) {
        const double top = image.at(y0, x0)[c] * (1 - wx) + image.at(y0, x1)[c] * wx;
        const double bottom = image.at(y1, x0)[c] * (1 - wx) + image.at(y1, x1)[c] * wx;
        out.view().at(y, x)[c] = static_cast<std::uint8_t>(std::lround(top * (1 - wy) + bottom * wy));
      }
    }
  }
  return out;
}

// Shrinking by an integer factor with area interpolation: the mean of each block.
Image reference_block_mean(ConstImageView image, int factor) {
  Image out(image.height / factor, image.width / factor, image.channels);
  for (int y = 0; y < out.height(); ++y)
    for (int x = 0; x < out.width(); ++x)
      for (int c = 0; c < image.channels; ++c) {
        int sum = 0;
        for (int dy = 0; dy < factor; ++dy)
          for (int dx = 0; dx < factor; ++dx) sum += image.at(y * factor + dy, x * factor + dx)[c];
        out.view().at(y, x)[c] =
            static_cast<std::uint8_t>(std::lround(static_cast<double>(sum) / (factor * factor)));
      }
  return out;
}

TEST(Resize, BilinearMatchesTheDefinitionWithinOneLevel) {
  for (const int channels : {1, 3}) {
    const Image image = testing::make_picture(97, 131, channels, 3);
    for (const auto& [height, width] :
         {std::pair{224, 224}, std::pair{50, 61}, std::pair{97, 1}, std::pair{300, 17}}) {
      Image out(height, width, channels);
      resize(image.view(), out.view());
      EXPECT_LE(testing::max_abs_diff(out.view(), reference_bilinear(image.view(), height, width).view()), 1)
          << height << "x" << width << "x" << channels;
    }
  }
}

TEST(Resize, AreaShrinkByAnIntegerFactorIsTheBlockMean) {
  for (const int channels : {1, 3}) {
    const Image image = testing::make_picture(96, 120, channels, 4);
    for (const int factor : {2, 3, 4}) {
      Image out(96 / factor, 120 / factor, channels);
      resize(image.view(), out.view(), Interpolation::area);
      EXPECT_LE(testing::max_abs_diff(out.view(), reference_block_mean(image.view(), factor).view()), 1);
    }
  }
}

TEST(Resize, NearestPicksSourcePixels) {
  const Image image = testing::make_picture(10, 10, 3, 2);
  Image out(5, 5, 3);
  resize(image.view(), out.view(), Interpolation::nearest);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 5; ++x)
      for (int c = 0; c < 3; ++c) ASSERT_EQ(out.view().at(y, x)[c], image.view().at(2 * y, 2 * x)[c]);
}

TEST(Resize, SameSizeCopiesAndStridedViewsWork) {
  const Image image = testing::make_picture(40, 50, 3, 5);
  std::vector<std::uint8_t> memory(std::size_t{40} * 200, 0x5A);
  const ImageView out(memory.data(), {40, 50, 3}, 200);
  resize(image.view(), out);
  EXPECT_EQ(testing::max_abs_diff(out, image.view()), 0);
  EXPECT_EQ(memory[199], 0x5A);
}

TEST(Resize, ChannelMismatchIsAnInvalidArgument) {
  const Image image = testing::make_picture(8, 8, 3);
  Image gray(4, 4, 1);
  EXPECT_THROW(resize(image.view(), gray.view()), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::ops
