// The crop-resize kernel's arithmetic (linear_resize_math.h), run on the host, gives ops::resize's bytes
// (OpenCV's INTER_LINEAR) for any window and size: shrinking, enlarging, exactly 2x (where OpenCV switches
// to INTER_AREA), same size, one-pixel windows, gray and RGB. Runs without a GPU.
#include "src/device/image/linear_resize_math.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conveyor/ops/crop.h"
#include "conveyor/ops/resize.h"
#include "conveyor/random.h"
#include "support/test_images.h"

namespace conveyor::cuda {
namespace {

// What the kernel computes for one window of `image` into an out_height x out_width image.
Image host_crop_resize(ConstImageView image, ops::Rect window, int out_height, int out_width) {
  const int channels = image.channels;
  Image out(out_height, out_width, channels);
  const double scale_x = linear_scale(window.width, out_width),
               scale_y = linear_scale(window.height, out_height);
  for (int y = 0; y < out_height; ++y)
    for (int x = 0; x < out_width; ++x) {
      const LinearTap tx = horizontal_tap(x, scale_x, window.width);
      const LinearTap ty = vertical_tap(y, scale_y, window.height);
      const std::uint8_t* top = image.at(window.y + ty.first, window.x);
      const std::uint8_t* bottom = image.at(window.y + ty.second, window.x);
      for (int c = 0; c < channels; ++c) {
        const int first = tx.first * channels + c, second = tx.second * channels + c;
        out.data()[(static_cast<std::size_t>(y) * out_width + x) * channels + c] = static_cast<std::uint8_t>(
            linear_blend(top[first], top[second], bottom[first], bottom[second], tx, ty));
      }
    }
  return out;
}

void expect_same_as_opencv(ConstImageView image, ops::Rect window, int out_height, int out_width) {
  Image expected(out_height, out_width, image.channels);
  ops::resize(ops::crop(image, window), expected.view(), ops::Interpolation::linear);
  const Image got = host_crop_resize(image, window, out_height, out_width);
  EXPECT_EQ(testing::max_abs_diff(got.view(), expected.view()), 0)
      << "window " << window.width << "x" << window.height << "+" << window.x << "+" << window.y << " -> "
      << out_width << "x" << out_height << " (" << image.channels << " channels)";
}

TEST(LinearResizeMath, RandomWindowsToRandomSizesMatchOpenCv) {
  Rng rng(21);
  for (const int channels : {3, 1}) {
    const Image image = testing::make_picture(300, 420, channels, 5);
    for (int trial = 0; trial < 150; ++trial) {
      const int w = 1 + static_cast<int>(rng.below(420)), h = 1 + static_cast<int>(rng.below(300));
      const ops::Rect window{static_cast<int>(rng.below(421 - w)), static_cast<int>(rng.below(301 - h)), w,
                             h};
      const int out_w = 1 + static_cast<int>(rng.below(260)), out_h = 1 + static_cast<int>(rng.below(260));
      expect_same_as_opencv(image.view(), window, out_h, out_w);
    }
  }
}

TEST(LinearResizeMath, TrainingSizesMatchOpenCv) {
  const Image image = testing::make_picture(375, 500, 3, 6);
  Rng rng(22);
  for (int trial = 0; trial < 40; ++trial) {
    const int w = 8 + static_cast<int>(rng.below(493)), h = 8 + static_cast<int>(rng.below(368));
    const ops::Rect window{static_cast<int>(rng.below(501 - w)), static_cast<int>(rng.below(376 - h)), w, h};
    expect_same_as_opencv(image.view(), window, 224, 224);
  }
}

TEST(LinearResizeMath, SpecialScalesMatchOpenCv) {
  const Image image = testing::make_picture(200, 300, 3, 7);
  expect_same_as_opencv(image.view(), {10, 20, 224, 112}, 56, 112);  // exactly 2x: OpenCV uses INTER_AREA
  expect_same_as_opencv(image.view(), {0, 0, 224, 160}, 160, 224);   // same size: a copy
  expect_same_as_opencv(image.view(), {5, 5, 112, 100}, 200, 224);   // exactly 2x larger
  expect_same_as_opencv(image.view(), {3, 4, 1, 1}, 17, 9);          // one pixel
  expect_same_as_opencv(image.view(), {3, 4, 1, 90}, 40, 40);        // one column
  expect_same_as_opencv(image.view(), {0, 0, 300, 200}, 1, 1);       // down to one pixel
  expect_same_as_opencv(image.view(), {7, 9, 90, 60}, 30, 30);       // 3x and 2x
}

}  // namespace
}  // namespace conveyor::cuda
