#include "src/device/decode/warmup_jpegs.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "conveyor/image.h"
#include "conveyor/ops/encode_jpeg.h"
#include "conveyor/random.h"

namespace conveyor::cuda {

std::vector<WarmupJpeg> warmup_jpegs() {
  constexpr int kWidth = 512, kHeight = 384;
  Image picture(ImageShape{kHeight, kWidth, 3});
  Rng rng(0x3636, 0x77);  // fixed: the same bytes every run
  const ImageView pixels = picture.view();
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      // Shading in three directions plus a little noise: smooth areas and detail, as in a photo.
      const double shade[3] = {128 + 100 * std::sin(x / 61.0), 128 + 90 * std::cos(y / 47.0),
                               128 + 80 * std::sin((x + y) / 83.0)};
      std::uint8_t* px = pixels.at(y, x);
      for (int c = 0; c < 3; ++c)
        px[c] = static_cast<std::uint8_t>(std::clamp(shade[c] + rng.uniform(-12.0, 12.0), 0.0, 255.0));
    }
  }
  const ConstImageView view = std::as_const(picture).view();
  return {{ops::encode_jpeg(view, {.quality = 90, .subsampling = ops::ChromaSubsampling::s420}), kWidth,
           kHeight, "baseline 4:2:0 (hardware)"},
          {ops::encode_jpeg(view, {.quality = 90, .subsampling = ops::ChromaSubsampling::s411}), kWidth,
           kHeight, "baseline 4:1:1 (GPU hybrid)"},
          {ops::encode_jpeg(
               view, {.quality = 90, .subsampling = ops::ChromaSubsampling::s420, .progressive = true}),
           kWidth, kHeight, "progressive 4:2:0 (Huffman on the CPU)"}};
}

}  // namespace conveyor::cuda
