// Encoding through libjpeg's own API, for what TurboJPEG does not offer: arithmetic coding, restart
// markers, hand-written progressive scan scripts. Header-only, so that the fuzz corpus tool (built
// without the test libraries) encodes with the same code as the tests.
#pragma once

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace conveyor::testing {

namespace libjpeg_detail {

// libjpeg's compressor with its fatal errors turned into a longjmp back to encode_with_libjpeg (the
// default handler calls exit()). Only trivially destructible objects live between setjmp and the calls.
struct Compressor {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr errors{};
  std::jmp_buf jump{};
  char message[JMSG_LENGTH_MAX] = {};
  unsigned char* out = nullptr;
  unsigned long size = 0;

  static void on_error(j_common_ptr common) {
    auto* self = static_cast<Compressor*>(common->client_data);
    (*common->err->format_message)(common, self->message);
    std::longjmp(self->jump, 1);
  }
  ~Compressor() {
    jpeg_destroy_compress(&cinfo);
    std::free(out);  // jpeg_mem_dest allocates with malloc
  }
};

}  // namespace libjpeg_detail

// Encodes `height` rows of `width` pixels with `channels` 8-bit values each (1: gray, 3: RGB), rows
// `stride` bytes apart, at `quality`; `configure(cinfo)` runs after jpeg_set_defaults.
template <class Configure>
std::vector<std::uint8_t> encode_with_libjpeg(const std::uint8_t* pixels, int height, int width, int channels,
                                              std::ptrdiff_t stride, int quality, Configure&& configure) {
  auto c = std::make_unique<libjpeg_detail::Compressor>();
  c->cinfo.err = jpeg_std_error(&c->errors);
  c->errors.error_exit = libjpeg_detail::Compressor::on_error;
  c->cinfo.client_data = c.get();
  if (setjmp(c->jump) != 0) throw std::runtime_error(std::string("libjpeg could not encode: ") + c->message);
  jpeg_create_compress(&c->cinfo);
  jpeg_mem_dest(&c->cinfo, &c->out, &c->size);
  c->cinfo.image_width = static_cast<JDIMENSION>(width);
  c->cinfo.image_height = static_cast<JDIMENSION>(height);
  c->cinfo.input_components = channels;
  c->cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c->cinfo);
  jpeg_set_quality(&c->cinfo, quality, TRUE);
  configure(c->cinfo);
  jpeg_start_compress(&c->cinfo, TRUE);
  while (c->cinfo.next_scanline < c->cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels + static_cast<std::ptrdiff_t>(c->cinfo.next_scanline) * stride);
    jpeg_write_scanlines(&c->cinfo, &row, 1);
  }
  jpeg_finish_compress(&c->cinfo);
  return std::vector<std::uint8_t>(c->out, c->out + c->size);
}

}  // namespace conveyor::testing
