#include "conveyor/ops/crop.h"

#include <algorithm>
#include <cstring>
#include <opencv2/core.hpp>
#include <string>

#include "conveyor/error.h"
#include "ops/image/cv_view.h"

namespace conveyor::ops {
namespace {

std::string describe(Rect r) {
  return std::to_string(r.width) + "x" + std::to_string(r.height) + "+" + std::to_string(r.x) + "+" +
         std::to_string(r.y);
}

template <class View>
View crop_view(View image, Rect window) {
  if (!window.inside(image.width, image.height))
    throw InvalidArgument("crop: window " + describe(window) + " is not inside the image");
  return View(image.at(window.y, window.x), {window.height, window.width, image.channels}, image.stride);
}

}  // namespace

ConstImageView crop(ConstImageView image, Rect window) { return crop_view(image, window); }
ImageView crop(ImageView image, Rect window) { return crop_view(image, window); }

// One pass over the output: rows outside the image are filled or mapped to a mirrored row, and within a
// row the part inside the image is one memcpy while the margins are made up pixel by pixel.
void crop_copy(ConstImageView image, Rect window, ImageView out, PadMode mode, std::uint8_t value) {
  if (image.empty()) throw InvalidArgument("crop: empty image");
  if (window.empty()) throw InvalidArgument("crop: empty window " + describe(window));
  if (out.shape() != ImageShape{window.height, window.width, image.channels})
    throw InvalidArgument("crop: output shape differs from the window " + describe(window));
  const int channels = image.channels;
  const int border = detail::cv_border(mode);
  const bool constant = mode == PadMode::constant;
  const int inside_begin = std::clamp(window.x, 0, image.width);
  const int inside_end = std::max(inside_begin, std::clamp(window.right(), 0, image.width));
  const int left = inside_begin - window.x;  // output columns before the image starts
  const std::size_t inside_bytes = static_cast<std::size_t>(inside_end - inside_begin) * channels;
  for (int oy = 0; oy < window.height; ++oy) {
    std::uint8_t* dst = out.row(oy);
    int sy = window.y + oy;
    if (sy < 0 || sy >= image.height) {
      if (constant) {
        std::memset(dst, value, static_cast<std::size_t>(window.width) * channels);
        continue;
      }
      sy = cv::borderInterpolate(sy, image.height, border);
    }
    const std::uint8_t* src = image.row(sy);
    for (int ox = 0; ox < window.width; ++ox) {
      if (ox == left && inside_bytes > 0) {
        std::memcpy(dst + static_cast<std::ptrdiff_t>(ox) * channels,
                    src + static_cast<std::ptrdiff_t>(inside_begin) * channels, inside_bytes);
        ox += inside_end - inside_begin - 1;
        continue;
      }
      std::uint8_t* pixel = dst + static_cast<std::ptrdiff_t>(ox) * channels;
      if (constant) {
        std::memset(pixel, value, static_cast<std::size_t>(channels));
      } else {
        const int sx = cv::borderInterpolate(window.x + ox, image.width, border);
        std::memcpy(pixel, src + static_cast<std::ptrdiff_t>(sx) * channels,
                    static_cast<std::size_t>(channels));
      }
    }
  }
}

Rect random_crop_window(int image_height, int image_width, int height, int width, int padding, Rng& rng) {
  if (height <= 0 || width <= 0 || padding < 0) throw InvalidArgument("random_crop: bad size or padding");
  const int padded_height = image_height + 2 * padding, padded_width = image_width + 2 * padding;
  if (padded_height < height || padded_width < width) {
    throw InvalidArgument("random_crop: " + std::to_string(height) + "x" + std::to_string(width) +
                          " does not fit in the padded " + std::to_string(padded_height) + "x" +
                          std::to_string(padded_width) + " image");
  }
  // torchvision draws the row first, then the column.
  const int y = static_cast<int>(rng.below(static_cast<std::uint64_t>(padded_height - height) + 1));
  const int x = static_cast<int>(rng.below(static_cast<std::uint64_t>(padded_width - width) + 1));
  return {x - padding, y - padding, width, height};
}

void random_crop(ConstImageView image, ImageView out, Rng& rng, int padding, PadMode mode,
                 std::uint8_t value) {
  const Rect window = random_crop_window(image.height, image.width, out.height, out.width, padding, rng);
  crop_copy(image, window, out, mode, value);
}

}  // namespace conveyor::ops
