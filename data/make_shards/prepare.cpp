#include "data/make_shards/prepare.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/ops/encode_jpeg.h"
#include "conveyor/ops/raw_image.h"
#include "conveyor/ops/resize.h"

namespace conveyor::data {

std::string Preparation::describe() const {
  if (!changes_images()) return "the files' own bytes";
  std::string text = max_side > 0 ? "max side " + std::to_string(max_side) : std::string("sizes kept");
  text += raw ? ", stored decoded (PPM)" : ", JPEG quality " + std::to_string(quality > 0 ? quality : 90);
  return text;
}

PreparedSize prepared_size(int width, int height, int max_side) noexcept {
  const int longer = std::max(width, height);
  if (max_side <= 0 || longer <= max_side) return {width, height};
  const double scale = static_cast<double>(max_side) / longer;
  const auto side = [&](int n) { return std::max(1, static_cast<int>(std::lround(n * scale))); };
  return {width >= height ? max_side : side(width), height > width ? max_side : side(height)};
}

std::vector<std::uint8_t> prepare_image(std::span<const std::uint8_t> jpeg, const Preparation& preparation) {
  const Image full = ops::decode_jpeg(jpeg, {.color = ops::ColorMode::rgb});
  const PreparedSize size = prepared_size(full.width(), full.height(), preparation.max_side);
  Image shrunk;
  ConstImageView image = full.view();
  if (size.width != full.width() || size.height != full.height()) {
    shrunk = Image(size.height, size.width, 3);
    ops::resize(full.view(), shrunk.view(), ops::Interpolation::area);
    image = std::as_const(shrunk).view();
  }
  if (preparation.raw) return ops::encode_raw_image(image);
  return ops::encode_jpeg(image, {.quality = preparation.quality > 0 ? preparation.quality : 90,
                                  .subsampling = ops::ChromaSubsampling::s420});
}

}  // namespace conveyor::data
