#include "support/test_images.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "conveyor/random.h"

namespace conveyor::testing {

Image make_picture(int height, int width, int channels, std::uint64_t seed) {
  Image image(height, width, channels);
  Rng rng(seed);
  const double fx = rng.uniform(0.02, 0.08), fy = rng.uniform(0.02, 0.08);
  const int cx = static_cast<int>(rng.below(static_cast<std::uint64_t>(width)));
  const int cy = static_cast<int>(rng.below(static_cast<std::uint64_t>(height)));
  for (int y = 0; y < height; ++y) {
    std::uint8_t* row = image.data() + static_cast<std::size_t>(y) * width * channels;
    for (int x = 0; x < width; ++x) {
      const bool inside = (x - cx) * (x - cx) + (y - cy) * (y - cy) < (width * height) / 16;
      for (int c = 0; c < channels; ++c) {
        double v = 128 + 60 * std::sin(fx * x * (c + 1) + fy * y) + 40 * std::cos(fy * y * (c + 2) - fx * x);
        if (inside) v = 255 - v;
        v += static_cast<double>(mix64(seed ^ (static_cast<std::uint64_t>(y) * 7919 + x * 31 + c)) % 17) - 8;
        row[x * channels + c] = static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  return image;
}

std::vector<std::uint8_t> encode_jpeg(ConstImageView image, int quality, Subsampling subsampling,
                                      bool progressive) {
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitCompress(), tjDestroy);
  if (!handle) throw std::runtime_error("tjInitCompress failed");
  const int pixel_format = image.channels == 1 ? TJPF_GRAY : TJPF_RGB;
  int samp = TJSAMP_420;
  switch (subsampling) {
    case Subsampling::s444: samp = TJSAMP_444; break;
    case Subsampling::s422: samp = TJSAMP_422; break;
    case Subsampling::s420: samp = TJSAMP_420; break;
    case Subsampling::gray: samp = TJSAMP_GRAY; break;
  }
  if (image.channels == 1) samp = TJSAMP_GRAY;
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int flags = TJFLAG_ACCURATEDCT | (progressive ? TJFLAG_PROGRESSIVE : 0);
  if (tjCompress2(handle.get(), image.data, image.width, static_cast<int>(image.stride), image.height,
                  pixel_format, &out, &size, samp, quality, flags) != 0) {
    std::string message = tjGetErrorStr2(handle.get());
    tjFree(out);
    throw std::runtime_error("tjCompress2: " + message);
  }
  std::vector<std::uint8_t> bytes(out, out + size);
  tjFree(out);
  return bytes;
}

std::vector<std::uint8_t> make_jpeg(int height, int width, int channels, std::uint64_t seed, int quality,
                                    bool progressive) {
  const Image picture = make_picture(height, width, channels, seed);
  return encode_jpeg(picture.view(), quality, channels == 1 ? Subsampling::gray : Subsampling::s420,
                     progressive);
}

int max_abs_diff(ConstImageView a, ConstImageView b) {
  if (a.shape() != b.shape()) return 255;
  int worst = 0;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width * a.channels; ++x)
      worst = std::max(worst, std::abs(int(a.row(y)[x]) - int(b.row(y)[x])));
  return worst;
}

double mean_abs_diff(ConstImageView a, ConstImageView b) {
  if (a.shape() != b.shape()) return 255.0;
  double sum = 0;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width * a.channels; ++x) sum += std::abs(int(a.row(y)[x]) - int(b.row(y)[x]));
  return sum / static_cast<double>(a.shape().bytes());
}

}  // namespace conveyor::testing
