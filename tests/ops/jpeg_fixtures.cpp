#include "jpeg_fixtures.h"

// clang-format off
#include <cstdio>
#include <jpeglib.h>
// clang-format on
#include <turbojpeg.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "support/jpeg_markers.h"

namespace conveyor::testing {
namespace {

using TjHandle = std::unique_ptr<void, int (*)(tjhandle)>;

}  // namespace

Image tj_decode(std::span<const std::uint8_t> jpeg, int channels, int scale_denom, bool fast) {
  TjHandle handle(tjInitDecompress(), tjDestroy);
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), jpeg.data(), jpeg.size(), &width, &height, &subsampling,
                          &colorspace) != 0)
    throw std::runtime_error(std::string("tjDecompressHeader3: ") + tjGetErrorStr2(handle.get()));
  const tjscalingfactor factor{1, scale_denom};
  Image image(TJSCALED(height, factor), TJSCALED(width, factor), channels);
  const int format = channels == 1 ? TJPF_GRAY : channels == 3 ? TJPF_RGB : TJPF_CMYK;
  const int flags = fast ? TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE : 0;
  if (tjDecompress2(handle.get(), jpeg.data(), jpeg.size(), image.data(), image.width(), 0, image.height(),
                    format, flags) != 0)
    throw std::runtime_error(std::string("tjDecompress2: ") + tjGetErrorStr2(handle.get()));
  return image;
}

std::vector<std::uint8_t> encode_cmyk_jpeg(ConstImageView cmyk, int quality) {
  TjHandle handle(tjInitCompress(), tjDestroy);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  if (tjCompress2(handle.get(), cmyk.data, cmyk.width, static_cast<int>(cmyk.stride), cmyk.height, TJPF_CMYK,
                  &out, &size, TJSAMP_420, quality, TJFLAG_ACCURATEDCT) != 0) {
    tjFree(out);
    throw std::runtime_error(std::string("tjCompress2: ") + tjGetErrorStr2(handle.get()));
  }
  std::vector<std::uint8_t> bytes(out, out + size);
  tjFree(out);
  return bytes;
}

std::vector<std::uint8_t> encode_with_libjpeg(ConstImageView image, const LibjpegEncoding& how, int quality) {
  // The fixtures only encode valid pictures, so libjpeg's default error handler (which exits) never runs.
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr errors{};
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = image.channels;
  cinfo.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : image.channels == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  if (image.channels == 4) {
    jpeg_set_colorspace(&cinfo, how.plain_cmyk_without_adobe ? JCS_CMYK : JCS_YCCK);
    if (how.plain_cmyk_without_adobe) cinfo.write_Adobe_marker = FALSE;
  }
  jpeg_set_quality(&cinfo, quality, TRUE);
  cinfo.arith_code = how.arithmetic ? TRUE : FALSE;
  std::vector<jpeg_scan_info> script;
  if (how.scans_per_coefficient > 0) {
    jpeg_scan_info dc{};
    dc.comps_in_scan = cinfo.num_components;
    for (int c = 0; c < cinfo.num_components; ++c) dc.component_index[c] = c;
    script.push_back(dc);
    for (int c = 0; c < cinfo.num_components; ++c) {
      for (int k = 1; k < 64; ++k) {
        for (int step = how.scans_per_coefficient - 1; step >= 0; --step) {
          jpeg_scan_info ac{};
          ac.comps_in_scan = 1;
          ac.component_index[0] = c;
          ac.Ss = ac.Se = k;
          ac.Ah = step == how.scans_per_coefficient - 1 ? 0 : step + 1;
          ac.Al = step;
          script.push_back(ac);
        }
      }
    }
    cinfo.scan_info = script.data();
    cinfo.num_scans = static_cast<int>(script.size());
  }
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<std::uint8_t*>(image.row(static_cast<int>(cinfo.next_scanline)));
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  const std::unique_ptr<unsigned char, void (*)(void*)> owned(buffer, std::free);  // libjpeg malloc'ed it
  return {buffer, buffer + size};
}

std::vector<std::uint8_t> with_exif_orientation(std::vector<std::uint8_t> jpeg, int orientation,
                                                bool big_endian) {
  const auto u16 = [&](std::uint16_t v) -> std::vector<std::uint8_t> {
    return big_endian ? std::vector<std::uint8_t>{std::uint8_t(v >> 8), std::uint8_t(v)}
                      : std::vector<std::uint8_t>{std::uint8_t(v), std::uint8_t(v >> 8)};
  };
  const auto u32 = [&](std::uint32_t v) {
    std::vector<std::uint8_t> hi = u16(std::uint16_t(v >> 16)), lo = u16(std::uint16_t(v));
    std::vector<std::uint8_t> out = big_endian ? hi : lo;
    const std::vector<std::uint8_t>& second = big_endian ? lo : hi;
    out.insert(out.end(), second.begin(), second.end());
    return out;
  };
  std::vector<std::uint8_t> payload = {'E', 'x', 'i', 'f', 0, 0};
  const auto append = [&](const std::vector<std::uint8_t>& bytes) {
    payload.insert(payload.end(), bytes.begin(), bytes.end());
  };
  append(big_endian ? std::vector<std::uint8_t>{'M', 'M'} : std::vector<std::uint8_t>{'I', 'I'});
  append(u16(42));
  append(u32(8));       // IFD0 right after the TIFF header
  append(u16(2));       // two entries: an unrelated tag first, then the orientation
  append(u16(0x010F));  // Make, ASCII, 4 bytes inline
  append(u16(2));
  append(u32(4));
  append({'c', 'a', 'm', 0});
  append(u16(0x0112));
  append(u16(3));
  append(u32(1));
  append(u16(static_cast<std::uint16_t>(orientation)));
  append(u16(0));
  append(u32(0));  // no next IFD
  const std::size_t length = payload.size() + 2;
  std::vector<std::uint8_t> segment = {0xFF, 0xE1, std::uint8_t(length >> 8), std::uint8_t(length)};
  segment.insert(segment.end(), payload.begin(), payload.end());
  jpeg.insert(jpeg.begin() + 2, segment.begin(), segment.end());
  return jpeg;
}

std::vector<std::uint8_t> with_frame(std::vector<std::uint8_t> jpeg, std::uint8_t sof, int precision) {
  const std::size_t at = find_marker(jpeg, is_frame_marker);
  jpeg[at + 1] = sof;
  jpeg[at + 4] = static_cast<std::uint8_t>(precision);
  return jpeg;
}

std::vector<std::uint8_t> with_declared_size(std::vector<std::uint8_t> jpeg, int width, int height) {
  const std::size_t at = find_marker(jpeg, is_frame_marker);
  jpeg[at + 5] = static_cast<std::uint8_t>(height >> 8);
  jpeg[at + 6] = static_cast<std::uint8_t>(height);
  jpeg[at + 7] = static_cast<std::uint8_t>(width >> 8);
  jpeg[at + 8] = static_cast<std::uint8_t>(width);
  return jpeg;
}

std::size_t scan_data_offset(std::span<const std::uint8_t> jpeg) {
  const std::size_t at = find_marker(jpeg, [](std::uint8_t code) { return code == 0xDA; });
  return at + 2 + (static_cast<std::size_t>(jpeg[at + 2]) << 8 | jpeg[at + 3]);
}

Image copy_of(ConstImageView image, ops::Rect window) {
  Image out(window.height, window.width, image.channels);
  const std::size_t bytes = static_cast<std::size_t>(window.width) * image.channels;
  for (int y = 0; y < window.height; ++y)
    std::memcpy(out.data() + y * bytes, image.at(window.y + y, window.x), bytes);
  return out;
}

}  // namespace conveyor::testing
