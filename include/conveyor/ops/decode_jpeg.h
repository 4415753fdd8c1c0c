// JPEG decoding on libjpeg-turbo: the whole image, only a window of it (ROI decode), and either of them
// at a DCT-domain scale of 1/2, 1/4 or 1/8. Output is 8-bit HWC, RGB or gray.
//
// Speed paths (see docs/libjpeg-turbo.md): a window is decoded with jpeg_crop_scanline + jpeg_skip_scanlines and the
// decoder stops after the last row it needs; libjpeg's DCT scaling is offered only at the power-of-two
// factors because the other M/8 factors run slower than no scaling at all.
//
// Bad input never crashes, hangs, exits or allocates without bound: every failure is a DecodeError
// (conveyor/error.h) whose DecodeFailure names the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "conveyor/image.h"
#include "conveyor/ops/rect.h"

namespace conveyor::ops {

// What the decoded pixels look like.
enum class ColorMode : std::uint8_t {
  rgb,   // 3 channels whatever the file holds (gray is replicated, CMYK is converted)
  gray,  // 1 channel (luma)
  keep,  // gray files stay 1 channel, everything else becomes RGB
};

// The colour space the JPEG stream is coded in.
enum class JpegColorSpace : std::uint8_t { gray, ycbcr, rgb, cmyk, ycck, unknown };

// What read_jpeg_header learns without decoding any pixel.
struct JpegHeader {
  int width = 0;  // as stored in the file, before EXIF orientation
  int height = 0;
  int components = 0;
  JpegColorSpace color_space = JpegColorSpace::unknown;
  bool progressive = false;
  bool arithmetic = false;  // arithmetic entropy coding (libjpeg-turbo 2.1 decodes it)
  int orientation = 1;      // EXIF orientation 1..8; 1 when absent or when it was not asked for

  // True when the EXIF orientation swaps width and height (orientations 5 to 8).
  bool transposed() const noexcept { return orientation >= 5 && orientation <= 8; }
};

struct DecodeOptions {
  ColorMode color = ColorMode::rgb;
  // Turn the image upright as its EXIF orientation tag says (off by default, as in torchvision).
  bool apply_exif_orientation = false;
  // Images with more pixels than this are refused (DecodeFailure::too_large) before any pixel memory is
  // allocated; it also bounds the memory libjpeg may use for a progressive image's coefficients.
  std::size_t max_pixels = 100'000'000;
  // libjpeg warns about corrupt-but-decodable data; by default warnings are only counted.
  bool warnings_are_errors = false;
  // JDCT_IFAST and plain (non-fancy) chroma upsampling: faster, about 0.6 levels of mean difference.
  bool fast = false;
};

// What one decode produced.
struct DecodeResult {
  ImageShape shape;
  int warnings = 0;     // libjpeg warnings (corrupt data that could still be decoded)
  int scale_denom = 1;  // the image was decoded at 1/scale_denom
  int orientation = 1;  // the EXIF orientation that was applied (1: none)
};

// Reads the header only. With read_orientation, also parses the EXIF orientation tag.
JpegHeader read_jpeg_header(std::span<const std::uint8_t> jpeg, bool read_orientation = false);

// Size of one side of an image decoded at 1/scale_denom (libjpeg rounds up).
constexpr int scaled_size(int size, int scale_denom) noexcept {
  return (size + scale_denom - 1) / scale_denom;
}

// The largest DCT scale denominator among 1, 2, 4, 8 at which a width x height window still covers at
// least target_width x target_height pixels, so that resizing to the target only ever shrinks.
int choose_dct_scale(int width, int height, int target_width, int target_height) noexcept;

// Decodes JPEGs one at a time and keeps its buffers from one image to the next, so that a decoder reused
// for many images stops allocating once it has seen the largest. Not thread-safe: use one per thread.
//
// Usage: open() reads the header; then one read call decodes (part of) the image. Regions and output
// shapes are in the coordinates of the image as it will be delivered: after EXIF orientation (when
// asked) and at 1/scale_denom (scale_denom is 1, 2, 4 or 8).
class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(JpegDecoder&&) noexcept;
  JpegDecoder& operator=(JpegDecoder&&) noexcept;

  // Reads the header of `jpeg` (which must outlive the read call) and checks it against the options.
  const JpegHeader& open(std::span<const std::uint8_t> jpeg, const DecodeOptions& options = {});
  // Shape of the whole opened image as read() delivers it at 1/scale_denom.
  ImageShape shape(int scale_denom = 1) const;

  // Decodes the whole image into `out`, whose shape must be shape(scale_denom).
  DecodeResult read(ImageView out, int scale_denom = 1);
  // Decodes only `region` into `out` (shape region.height x region.width x channels). Exactly equal to
  // decoding the whole image at the same scale and cropping.
  DecodeResult read_region(Rect region, ImageView out, int scale_denom = 1);
  // Like read_region, but returns a view of the pixels in this decoder's own buffer, valid until the
  // next call; saves a copy when the pixels are about to be resized anyway.
  ConstImageView read_region_view(Rect region, int scale_denom = 1);

  // Bytes a read of `window` (in the coordinates of shape(1)) at 1/scale_denom allocates at most, known
  // from the opened header before anything is allocated: libjpeg's whole-image coefficient buffers when
  // the file has several scans (progressive, about 2 bytes per pixel and component: 270 MB for a 9,500 x
  // 9,500 4:2:0 image), the decoded rows (full width, 4 bytes a pixel at most) and the window's pixels
  // twice (conversion, orientation). What a decode reserves from a pipeline's decode-memory budget
  // (Sample::reserve_decode_memory). Throws InvalidArgument when no image is open.
  std::size_t memory_estimate(Rect window, int scale_denom = 1) const;

  // Warnings libjpeg raised on the current image so far.
  int warnings() const noexcept;
  // The EXIF orientation the reads of the opened image apply (1: none).
  int orientation() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// One-shot helpers (each makes a decoder: reuse a JpegDecoder in loops).
DecodeResult decode_jpeg(std::span<const std::uint8_t> jpeg, ImageView out,
                         const DecodeOptions& options = {});
DecodeResult decode_jpeg(std::span<const std::uint8_t> jpeg, Image& out, const DecodeOptions& options = {});
Image decode_jpeg(std::span<const std::uint8_t> jpeg, const DecodeOptions& options = {});
DecodeResult decode_jpeg_region(std::span<const std::uint8_t> jpeg, Rect region, ImageView out,
                                const DecodeOptions& options = {}, int scale_denom = 1);

}  // namespace conveyor::ops
