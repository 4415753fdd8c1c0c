#include "jpeg_variants.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on
#include <turbojpeg.h>

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "support/jpeg_markers.h"
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

// libjpeg's compressor with its fatal errors turned into a longjmp back to encode_arithmetic (the
// default handler calls exit()). Only trivially destructible objects live between setjmp and the calls.
struct Compressor {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr errors{};
  std::jmp_buf jump{};
  unsigned char* out = nullptr;
  unsigned long size = 0;

  static void on_error(j_common_ptr common) {
    std::longjmp(static_cast<Compressor*>(common->client_data)->jump, 1);
  }
  ~Compressor() {
    jpeg_destroy_compress(&cinfo);
    std::free(out);  // jpeg_mem_dest allocates with malloc
  }
};

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

// Encodes through the libjpeg API; `configure` runs after jpeg_set_defaults.
template <class Configure>
Bytes encode_with_libjpeg(const Image& picture, Configure&& configure) {
  auto c = std::make_unique<Compressor>();
  c->cinfo.err = jpeg_std_error(&c->errors);
  c->errors.error_exit = Compressor::on_error;
  c->cinfo.client_data = c.get();
  if (setjmp(c->jump) != 0) throw std::runtime_error("libjpeg could not encode with arithmetic coding");
  jpeg_create_compress(&c->cinfo);
  jpeg_mem_dest(&c->cinfo, &c->out, &c->size);
  c->cinfo.image_width = static_cast<JDIMENSION>(picture.width());
  c->cinfo.image_height = static_cast<JDIMENSION>(picture.height());
  c->cinfo.input_components = picture.channels();
  c->cinfo.in_color_space = picture.channels() == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c->cinfo);
  jpeg_set_quality(&c->cinfo, 90, TRUE);
  configure(c->cinfo);
  jpeg_start_compress(&c->cinfo, TRUE);
  while (c->cinfo.next_scanline < c->cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(picture.view().row(static_cast<int>(c->cinfo.next_scanline)));
    jpeg_write_scanlines(&c->cinfo, &row, 1);
  }
  jpeg_finish_compress(&c->cinfo);
  return Bytes(c->out, c->out + c->size);
}

}  // namespace

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
