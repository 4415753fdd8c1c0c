// crop, crop_copy, pad, random_crop, center_crop, flip: against plain loops.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops/center_crop.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/flip.h"
#include "conveyor/ops/pad.h"
#include "support/test_images.h"

namespace conveyor::ops {
namespace {

// numpy.pad's index rules, written out independently of OpenCV.
int source_index(int i, int n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::constant:
      return -1;
    case PadMode::edge:
      return i < 0 ? 0 : n - 1;
    case PadMode::reflect: {
      if (n == 1) return 0;
      const int period = 2 * (n - 1);
      int k = ((i % period) + period) % period;
      return k < n ? k : period - k;
    }
    case PadMode::symmetric: {
      const int period = 2 * n;
      int k = ((i % period) + period) % period;
      return k < n ? k : period - 1 - k;
    }
  }
  return -1;
}

Image reference_window(ConstImageView image, Rect window, PadMode mode, std::uint8_t value) {
  Image out(window.height, window.width, image.channels);
  for (int y = 0; y < window.height; ++y)
    for (int x = 0; x < window.width; ++x) {
      const int sy = source_index(window.y + y, image.height, mode);
      const int sx = source_index(window.x + x, image.width, mode);
      for (int c = 0; c < image.channels; ++c)
        out.view().at(y, x)[c] = sy < 0 || sx < 0 ? value : image.at(sy, sx)[c];
    }
  return out;
}

TEST(Crop, IsAViewOfTheSamePixels) {
  Image image = testing::make_picture(10, 12, 3);
  const ImageView view = crop(image.view(), Rect{3, 2, 5, 4});
  EXPECT_EQ(view.data, image.view().at(2, 3));
  EXPECT_EQ(view.shape(), (ImageShape{4, 5, 3}));
  EXPECT_EQ(view.stride, 12 * 3);
  EXPECT_THROW(crop(image.view(), Rect{8, 0, 5, 4}), InvalidArgument);
  EXPECT_THROW(crop(image.view(), Rect{-1, 0, 5, 4}), InvalidArgument);
}

TEST(CropCopy, MatchesNumpyPaddingRulesForEveryModeAndWindow) {
  for (const int channels : {1, 3}) {
    const Image image = testing::make_picture(7, 9, channels, 4);
    for (const PadMode mode : {PadMode::constant, PadMode::edge, PadMode::reflect, PadMode::symmetric}) {
      for (const Rect window :
           {Rect{0, 0, 9, 7}, Rect{-4, -4, 17, 15}, Rect{-20, 3, 5, 2}, Rect{6, -9, 12, 30},
            Rect{-1, -1, 1, 1}, Rect{2, 1, 3, 3}, Rect{8, 6, 25, 1}}) {
        Image out(window.height, window.width, channels);
        crop_copy(image.view(), window, out.view(), mode, 77);
        const Image expected = reference_window(image.view(), window, mode, 77);
        ASSERT_EQ(testing::max_abs_diff(out.view(), expected.view()), 0)
            << "mode " << int(mode) << " window " << window.x << "," << window.y << " " << window.width << "x"
            << window.height << " channels " << channels;
      }
    }
  }
}

TEST(Pad, AddsMarginsAndPadToCentres) {
  const Image image = testing::make_picture(5, 6, 3, 8);
  Image out(5 + 1 + 2, 6 + 3 + 4, 3);
  pad(image.view(), out.view(), 1, 2, 3, 4, PadMode::reflect);
  EXPECT_EQ(testing::max_abs_diff(
                out.view(), reference_window(image.view(), {-3, -1, 13, 8}, PadMode::reflect, 0).view()),
            0);
  Image centred(8, 9, 3);
  pad_to(image.view(), centred.view(), PadMode::constant, 9);
  EXPECT_EQ(testing::max_abs_diff(
                centred.view(), reference_window(image.view(), {-1, -1, 9, 8}, PadMode::constant, 9).view()),
            0);
  Image wrong(8, 8, 3);
  EXPECT_THROW(pad(image.view(), wrong.view(), 1, 2, 3, 4), InvalidArgument);
  EXPECT_THROW(pad(image.view(), out.view(), -1, 4, 3, 4), InvalidArgument);
}

TEST(RandomCrop, WindowsCoverEveryPositionOfThePaddedImageUniformly) {
  Rng rng(5);
  std::map<std::pair<int, int>, int> seen;
  for (int i = 0; i < 8100; ++i) {
    const Rect w = random_crop_window(28, 28, 28, 28, 4, rng);
    ASSERT_GE(w.x, -4);
    ASSERT_LE(w.x, 4);
    ASSERT_GE(w.y, -4);
    ASSERT_LE(w.y, 4);
    ++seen[{w.x, w.y}];
  }
  EXPECT_EQ(seen.size(), 81u);  // 9 x 9 positions, about 100 draws each
  for (const auto& [position, count] : seen) {
    EXPECT_GT(count, 50);
    EXPECT_LT(count, 160);
  }
  EXPECT_THROW(random_crop_window(28, 28, 40, 28, 4, rng), InvalidArgument);
  EXPECT_EQ(random_crop_window(28, 28, 36, 36, 4, rng), (Rect{-4, -4, 36, 36}));
}

TEST(RandomCrop, IsTheWindowItDrewCopiedWithPaddingAndRepeatsForTheSameSeed) {
  const Image image = testing::make_picture(28, 28, 1, 12);
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    Image out(28, 28, 1), again(28, 28, 1);
    Rng rng(seed), same(seed), window_rng(seed);
    random_crop(image.view(), out.view(), rng, 4);
    random_crop(image.view(), again.view(), same, 4);
    const Rect window = random_crop_window(28, 28, 28, 28, 4, window_rng);
    EXPECT_EQ(testing::max_abs_diff(out.view(), again.view()), 0);
    EXPECT_EQ(testing::max_abs_diff(out.view(),
                                    reference_window(image.view(), window, PadMode::constant, 0).view()),
              0);
  }
}

TEST(CenterCrop, RoundsOffsetsLikeTorchvision) {
  EXPECT_EQ(center_crop_window(256, 256, 224, 224), (Rect{16, 16, 224, 224}));
  EXPECT_EQ(center_crop_window(7, 8, 4, 5), (Rect{2, 2, 5, 4}));    // round(1.5) = 2
  EXPECT_EQ(center_crop_window(9, 10, 4, 5), (Rect{2, 2, 5, 4}));   // round(2.5) = 2 (half to even)
  EXPECT_EQ(center_crop_window(4, 4, 6, 6), (Rect{-1, -1, 6, 6}));  // larger than the image: reaches outside
  const Image image = testing::make_picture(9, 10, 3);
  EXPECT_EQ(center_crop(image.view(), 4, 5).data, image.view().at(2, 2));
}

TEST(CenterFit, KeepsTheLargestCentredWindowOfTheOutputsAspect) {
  EXPECT_EQ(center_fit_window(375, 500, 224, 224), (Rect{62, 0, 375, 375}));
  EXPECT_EQ(center_fit_window(500, 375, 224, 224), (Rect{0, 62, 375, 375}));
  EXPECT_EQ(center_fit_window(100, 400, 50, 100), (Rect{100, 0, 200, 100}));
  EXPECT_EQ(center_fit_window(300, 300, 10, 10), (Rect{0, 0, 300, 300}));
}

Image reference_flip(ConstImageView image, bool horizontal) {
  Image out(image.shape());
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x)
      for (int c = 0; c < image.channels; ++c)
        out.view().at(y, x)[c] =
            horizontal ? image.at(y, image.width - 1 - x)[c] : image.at(image.height - 1 - y, x)[c];
  return out;
}

TEST(Flip, InPlaceAndCopyingMatchPlainLoopsForOddSizes) {
  for (const int channels : {1, 3}) {
    for (const auto& [height, width] :
         {std::pair{1, 1}, std::pair{7, 13}, std::pair{224, 224}, std::pair{33, 2}, std::pair{3, 31},
          std::pair{3, 32}, std::pair{3, 33}, std::pair{2, 47}, std::pair{2, 48}, std::pair{2, 63},
          std::pair{2, 64}, std::pair{2, 97}}) {
      const Image image = testing::make_picture(height, width, channels, 6);
      for (const bool horizontal : {true, false}) {
        const Image expected = reference_flip(image.view(), horizontal);
        Image in_place = image, copied(image.shape());
        if (horizontal) {
          flip_horizontal(in_place.view());
          flip_horizontal(image.view(), copied.view());
        } else {
          flip_vertical(in_place.view());
          flip_vertical(image.view(), copied.view());
        }
        EXPECT_EQ(testing::max_abs_diff(in_place.view(), expected.view()), 0);
        EXPECT_EQ(testing::max_abs_diff(copied.view(), expected.view()), 0);
      }
    }
  }
}

TEST(Flip, WorksOnAWindowOfALargerImage) {
  Image image = testing::make_picture(20, 30, 3, 2);
  const Image before = image;
  const Rect window{5, 4, 11, 9};
  flip_horizontal(crop(image.view(), window));
  const Image expected = reference_flip(crop(before.view(), window), true);
  EXPECT_EQ(testing::max_abs_diff(crop(image.view(), window), expected.view()), 0);
  EXPECT_EQ(image.data()[0], before.data()[0]);  // outside the window: untouched
}

}  // namespace
}  // namespace conveyor::ops
