// The one place that talks to libjpeg's decompressor: an owned jpeg_decompress_struct whose fatal errors
// come back as DecodeError instead of exit().
#pragma once

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <span>

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first
#include <jpeglib.h>
// clang-format on

#include "conveyor/error.h"
#include "conveyor/ops/decode_jpeg.h"

namespace conveyor::ops::detail {

// Owns one libjpeg decompressor. open() makes a fresh jpeg_decompress_struct for every image: libjpeg-turbo
// before 3.1.2 has a use-after-free in jpeg_skip_scanlines when a reused object switches between merged
// and normal upsampling (its stale colour-converter pointer survives jpeg_abort), and a fresh object costs
// little next to a decode.
//
// Error handling: libjpeg reports a fatal error by calling error_exit, which must not return. Ours
// longjmps back into guarded(), which then throws. longjmp skips C++ destructors, so every libjpeg call
// goes through guarded() and the code between its setjmp and the libjpeg call creates no object that needs
// destruction; the libjpeg object itself is released by this class's destructor, which is safe after an
// error.
class JpegDecompress {
 public:
  JpegDecompress() noexcept;
  ~JpegDecompress();
  JpegDecompress(const JpegDecompress&) = delete;
  JpegDecompress& operator=(const JpegDecompress&) = delete;

  // Forgets any previous image, makes a fresh decompressor and reads the header of `jpeg`. Refuses empty
  // input, input without a JPEG SOI marker, and images over options.max_pixels.
  void open(std::span<const std::uint8_t> jpeg, const DecodeOptions& options, bool read_orientation);
  const JpegHeader& header() const noexcept { return header_; }
  // After open(): the bytes of libjpeg's whole-image coefficient buffers, which start() allocates when the
  // file has several scans (progressive or multi-scan); 0 for a single-scan file, which libjpeg decodes
  // one row of blocks at a time.
  std::size_t coefficient_bytes() noexcept;

  // Starts decompression into `space` (JCS_RGB, JCS_GRAYSCALE or JCS_CMYK) at 1/scale_denom.
  void start(int scale_denom, J_COLOR_SPACE space, bool fast);
  int output_width() const noexcept { return static_cast<int>(cinfo_.output_width); }
  int output_height() const noexcept { return static_cast<int>(cinfo_.output_height); }
  int output_components() const noexcept { return cinfo_.output_components; }

  // Delivers only columns [x, x + width) of each row; libjpeg moves x left to an iMCU boundary and widens
  // the row accordingly. Returns the first column actually delivered (output_width() is the new width).
  int crop_columns(int x, int width);
  // Skips `count` rows (they are still Huffman-decoded: entropy coding has no random access).
  void skip_rows(int count);
  // Reads the next `count` rows into rows starting at `first`, `stride` bytes apart.
  void read_rows(std::uint8_t* first, std::ptrdiff_t stride, int count);
  // Releases the decompressor now (done after the last needed row: the rest is never read).
  void close() noexcept;

  int warnings() const noexcept { return warnings_; }
  // True when the stream said the CMYK values are stored inverted (Adobe APP14 marker).
  bool adobe_marker() const noexcept { return adobe_marker_; }

 private:
  static void on_error_exit(j_common_ptr common);
  static void on_emit_message(j_common_ptr common, int level);
  static void on_output_message(j_common_ptr) {}
  static void on_progress(j_common_ptr common);

  template <class Call>
  void guarded(Call&& call);
  [[noreturn]] void jump(DecodeFailure failure);
  [[noreturn]] void throw_failure() const;

  jpeg_decompress_struct cinfo_{};
  jpeg_error_mgr errors_{};
  jpeg_progress_mgr progress_{};
  std::jmp_buf jump_buffer_{};
  bool created_ = false;
  bool warnings_are_errors_ = false;
  bool adobe_marker_ = false;
  bool eof_seen_ = false;  // the data ended early; libjpeg inserted a fake end-of-image marker
  int warnings_ = 0;
  DecodeFailure failure_ = DecodeFailure::corrupt;
  char message_[JMSG_LENGTH_MAX] = {};
  JpegHeader header_;
};

}  // namespace conveyor::ops::detail
