#include "conveyor/ops/center_crop.h"

#include <algorithm>
#include <cmath>

#include "conveyor/error.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/random_resized_crop.h"

namespace conveyor::ops {

Rect center_crop_window(int image_height, int image_width, int height, int width) {
  if (height <= 0 || width <= 0) throw InvalidArgument("center_crop: empty crop");
  // torchvision: int(round((image_size - crop_size) / 2.0)), Python's round halves to even.
  const auto offset = [](int image, int crop) {
    return static_cast<int>(std::nearbyint((image - crop) / 2.0));
  };
  return {offset(image_width, width), offset(image_height, height), width, height};
}

ConstImageView center_crop(ConstImageView image, int height, int width) {
  return crop(image, center_crop_window(image.height, image.width, height, width));
}

Rect center_fit_window(int image_height, int image_width, int height, int width) {
  if (height <= 0 || width <= 0 || image_height <= 0 || image_width <= 0)
    throw InvalidArgument("center_fit_window: empty size");
  int h = image_height, w = image_width;
  // Compare the aspect ratios without rounding: image_width / image_height vs width / height.
  if (static_cast<long long>(image_width) * height > static_cast<long long>(image_height) * width) {
    w = std::max(1, static_cast<int>(std::lround(static_cast<double>(image_height) * width / height)));
  } else {
    h = std::max(1, static_cast<int>(std::lround(static_cast<double>(image_width) * height / width)));
  }
  return center_crop_window(image_height, image_width, h, w);
}

DecodeResult decode_center_crop(JpegDecoder& decoder, std::span<const std::uint8_t> jpeg, ImageView out,
                                const DecodeOptions& options, Interpolation interpolation) {
  decoder.open(jpeg, options);
  const ImageShape full = decoder.shape(1);
  return decode_resized_window(decoder, center_fit_window(full.height, full.width, out.height, out.width),
                               out, interpolation);
}

}  // namespace conveyor::ops
