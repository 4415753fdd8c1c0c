#include "jpeg_variants.h"

#include <turbojpeg.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "support/jpeg_markers.h"
#include "support/libjpeg_encode.h"
#include "support/test_images.h"

namespace conveyor::testing {
namespace {

using TjHandle = std::unique_ptr<void, int (*)(tjhandle)>;

Bytes tj_compress(const std::uint8_t* pixels, int height, int width, int format, int subsampling) {
  TjHandle handle(tjInitCompress(), tjDestroy);
  if (!handle) throw std::runtime_error("tjInitCompress failed");
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int channels = tjPixelSize[format];
  if (tjCompress2(handle.get(), pixels, width, width * channels, height, format, &out, &size, subsampling, 90,
                  TJFLAG_ACCURATEDCT) != 0) {
    const std::string message = tjGetErrorStr2(handle.get());
    tjFree(out);
    throw std::runtime_error("tjCompress2: " + message);
  }
  Bytes bytes(out, out + size);
  tjFree(out);
  return bytes;
}

}  // namespace

Bytes make_cmyk_jpeg(int height, int width, std::uint64_t seed) {
  const Image rgb = make_picture(height, width, 3, seed);
  Image cmyk(height, width, 4);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const std::uint8_t* p = rgb.view().at(y, x);
      std::uint8_t* q = cmyk.view().at(y, x);
      q[0] = p[0];
      q[1] = p[1];
      q[2] = p[2];
      q[3] = static_cast<std::uint8_t>(255 - (x * 255) / std::max(1, width - 1));  // a ramp of black ink
    }
  }
  return tj_compress(cmyk.data(), height, width, TJPF_CMYK, TJSAMP_420);
}

Bytes make_444_jpeg(int height, int width, std::uint64_t seed) {
  const Image rgb = make_picture(height, width, 3, seed);
  return tj_compress(rgb.data(), height, width, TJPF_RGB, TJSAMP_444);
}

namespace {

// Through the libjpeg API, at quality 90 like the TurboJPEG encodes above.
template <class Configure>
Bytes encode_with_libjpeg(const Image& picture, Configure&& configure) {
  return testing::encode_with_libjpeg(picture.data(), picture.height(), picture.width(), picture.channels(),
                                      picture.view().stride, 90, std::forward<Configure>(configure));
}

}  // namespace

Bytes make_huge_progressive_jpeg(int side, std::uint64_t seed) {
  const Image row = make_picture(1, side, 3, seed);
  // Stride 0: libjpeg reads the same row `side` times, so the picture never exists in memory whole.
  return testing::encode_with_libjpeg(row.data(), side, side, 3, 0, 75,
                                      [](jpeg_compress_struct& cinfo) { jpeg_simple_progression(&cinfo); });
}

Bytes make_arithmetic_jpeg(int height, int width, std::uint64_t seed) {
  return encode_with_libjpeg(make_picture(height, width, 3, seed),
                             [](jpeg_compress_struct& cinfo) { cinfo.arith_code = TRUE; });
}

Bytes make_incomplete_progressive_jpeg(int height, int width, int channels, std::uint64_t seed) {
  // DC of every component at half precision, then AC 1..5 of each component at a quarter: no refinement
  // scan ever follows, so coefficients stay coarse and AC 6..63 stay zero.
  std::vector<jpeg_scan_info> scans;
  scans.push_back({channels, {0, 1, 2, 0}, 0, 0, 0, 1});
  for (int c = 0; c < channels; ++c) scans.push_back({1, {c, 0, 0, 0}, 1, 5, 0, 2});
  return encode_with_libjpeg(make_picture(height, width, channels, seed), [&](jpeg_compress_struct& cinfo) {
    cinfo.scan_info = scans.data();
    cinfo.num_scans = static_cast<int>(scans.size());
  });
}

Bytes with_precision(Bytes jpeg, int precision) {
  jpeg[frame_offset(jpeg) + 4] = static_cast<std::uint8_t>(precision);
  return jpeg;
}

Bytes with_declared_size(Bytes jpeg, int width, int height) {
  const std::size_t at = frame_offset(jpeg);
  jpeg[at + 5] = static_cast<std::uint8_t>(height >> 8);
  jpeg[at + 6] = static_cast<std::uint8_t>(height);
  jpeg[at + 7] = static_cast<std::uint8_t>(width >> 8);
  jpeg[at + 8] = static_cast<std::uint8_t>(width);
  return jpeg;
}

std::size_t frame_offset(std::span<const std::uint8_t> jpeg) { return find_marker(jpeg, is_frame_marker); }

std::size_t scan_data_offset(std::span<const std::uint8_t> jpeg) {
  const std::size_t at = find_marker(jpeg, [](std::uint8_t code) { return code == 0xDA; });
  return at + 2 + (static_cast<std::size_t>(jpeg[at + 2]) << 8 | jpeg[at + 3]);
}

std::size_t end_of_image_offset(std::span<const std::uint8_t> jpeg) {
  const std::size_t n = jpeg.size();
  return n >= 2 && jpeg[n - 2] == 0xFF && jpeg[n - 1] == 0xD9 ? n - 2 : n;
}

Bytes first_bytes(const Bytes& bytes, std::size_t count) {
  return Bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(std::min(count, bytes.size())));
}

}  // namespace conveyor::testing
