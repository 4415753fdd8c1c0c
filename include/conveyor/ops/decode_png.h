// PNG decoding on libspng: images (any PNG colour type and depth, into 8-bit RGB or gray) and segmentation
// masks (one channel of class ids: 8- or 16-bit gray, or palette indices, values kept as stored). Under
// the same rules as JPEG (conveyor/ops/decode_jpeg.h): the pixel limit is checked from the header before
// any pixel memory is allocated, memory_estimate() says what a decode takes for the pipeline's
// decode-memory budget, and every failure is a DecodeError naming the reason.
// Also the PNG encoder programs use to write images and masks (preview, the data tools, the tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "conveyor/image.h"
#include "conveyor/mask.h"
#include "conveyor/ops/decode_jpeg.h"

namespace conveyor::ops {

// What the first bytes say an encoded image is.
enum class ImageFormat : std::uint8_t { jpeg, png, unknown };
ImageFormat detect_image_format(std::span<const std::uint8_t> bytes) noexcept;

// What PngDecoder::open learns from the header.
struct PngHeader {
  int width = 0;
  int height = 0;
  int bit_depth = 0;   // 1, 2, 4, 8 or 16
  int color_type = 0;  // PNG's: 0 gray, 2 RGB, 3 palette, 4 gray + alpha, 6 RGB + alpha
  bool interlaced = false;

  bool gray() const noexcept { return color_type == 0 || color_type == 4; }
  // A mask is one channel of class ids: gray without alpha, or palette indices.
  bool one_channel() const noexcept { return color_type == 0 || color_type == 3; }
};

// Decodes PNGs one at a time. Not thread-safe: use one per thread. open() reads the header of `png`
// (which must outlive the read call) and checks the pixel limit; then one read call decodes.
class PngDecoder {
 public:
  PngDecoder();
  ~PngDecoder();
  PngDecoder(PngDecoder&&) noexcept;
  PngDecoder& operator=(PngDecoder&&) noexcept;

  const PngHeader& open(std::span<const std::uint8_t> png,
                        std::size_t max_pixels = DecodeOptions{}.max_pixels);

  // The image as read_image delivers it: 3 channels for ColorMode::rgb, 1 for gray, and for keep 1 when
  // the PNG is gray (with or without alpha), else 3.
  ImageShape image_shape(ColorMode color = ColorMode::rgb) const;
  // Decodes into `out` (shape image_shape(color)): palette expanded, alpha dropped (not blended), 16-bit
  // samples cut to their high byte, gray of 1, 2 or 4 bits scaled to 0-255.
  void read_image(ImageView out, ColorMode color = ColorMode::rgb);

  // The mask as read_mask delivers it: uint16 for a 16-bit gray PNG, uint8 otherwise. DecodeError
  // (unsupported) for a PNG with colour or alpha: a mask holds one class id per pixel.
  MaskShape mask_shape() const;
  // Decodes the class ids into `out` (shape mask_shape()): values as stored (palette indices, not
  // colours; 1, 2 and 4-bit values unscaled).
  void read_mask(MaskView out);

  // Bytes a read allocates at most (the output, libspng's rows and its inflate state), from the header.
  std::size_t memory_estimate() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// One-shot helpers.
Image decode_png(std::span<const std::uint8_t> png, ColorMode color = ColorMode::rgb);
Mask decode_png_mask(std::span<const std::uint8_t> png, std::size_t max_pixels = DecodeOptions{}.max_pixels);

// A PNG of `image` (1 channel: gray, 3: RGB, 4: RGBA; 8-bit) or of `mask` (8- or 16-bit gray).
std::vector<std::uint8_t> encode_png(ConstImageView image);
std::vector<std::uint8_t> encode_png(ConstMaskView mask);

}  // namespace conveyor::ops
