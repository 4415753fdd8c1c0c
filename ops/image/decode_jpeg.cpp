#include "conveyor/ops/decode_jpeg.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "conveyor/error.h"
#include "ops/image/exif_orientation.h"
#include "ops/image/jpeg_decompress.h"

namespace conveyor::ops {
namespace {

// How libjpeg is asked to deliver the pixels, and what we make of them.
struct OutputSpace {
  J_COLOR_SPACE jpeg;  // what libjpeg writes
  int channels;        // what the caller gets
  bool cmyk;           // libjpeg writes CMYK, which we convert ourselves
};

OutputSpace output_space(const JpegHeader& header, ColorMode mode) {
  switch (header.color_space) {
    case JpegColorSpace::gray:
      return mode == ColorMode::rgb ? OutputSpace{JCS_RGB, 3, false} : OutputSpace{JCS_GRAYSCALE, 1, false};
    case JpegColorSpace::ycbcr:
    case JpegColorSpace::rgb:
      return mode == ColorMode::gray ? OutputSpace{JCS_GRAYSCALE, 1, false} : OutputSpace{JCS_RGB, 3, false};
    case JpegColorSpace::cmyk:
    case JpegColorSpace::ycck:  // libjpeg turns YCCK into CMYK
      return {JCS_CMYK, mode == ColorMode::gray ? 1 : 3, true};
    case JpegColorSpace::unknown:
      break;
  }
  throw DecodeError(DecodeFailure::unsupported,
                    "unknown colour space with " + std::to_string(header.components) + " components");
}

void check_scale(int scale_denom) {
  if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8) {
    throw InvalidArgument("JPEG DCT scale must be 1/1, 1/2, 1/4 or 1/8, got 1/" +
                          std::to_string(scale_denom));
  }
}

// CMYK to RGB (or luma). libjpeg delivers the values as stored. Photoshop and most CMYK JPEGs in the wild
// store them inverted (0 = full ink) and say so with an Adobe APP14 marker; libjpeg itself writes that
// marker too. So with the marker, R = C * K / 255 on the stored values (as PIL, OpenCV and browsers do);
// without it the values are ink amounts and R = (255 - C) * (255 - K) / 255. This is the naive conversion,
// without an ICC profile: colours are approximate, as in those libraries.
void cmyk_to_rgb_or_gray(ConstImageView cmyk, bool inverted, ImageView out) {
  const std::uint8_t flip = inverted ? 0 : 255;
  for (int y = 0; y < cmyk.height; ++y) {
    const std::uint8_t* src = cmyk.row(y);
    std::uint8_t* dst = out.row(y);
    for (int x = 0; x < cmyk.width; ++x, src += 4) {
      const unsigned k = src[3] ^ flip;
      const unsigned r = ((src[0] ^ flip) * k + 127) / 255;
      const unsigned g = ((src[1] ^ flip) * k + 127) / 255;
      const unsigned b = ((src[2] ^ flip) * k + 127) / 255;
      if (out.channels == 1) {
        // libjpeg's own RGB-to-gray weights (ITU-R BT.601), 16-bit fixed point.
        *dst++ = static_cast<std::uint8_t>((r * 19595 + g * 38470 + b * 7471 + 32768) >> 16);
      } else {
        dst[0] = static_cast<std::uint8_t>(r);
        dst[1] = static_cast<std::uint8_t>(g);
        dst[2] = static_cast<std::uint8_t>(b);
        dst += 3;
      }
    }
  }
}

void copy_pixels(ConstImageView src, ImageView dst) {
  const std::size_t bytes = static_cast<std::size_t>(src.width) * static_cast<std::size_t>(src.channels);
  for (int y = 0; y < src.height; ++y) std::memcpy(dst.row(y), src.row(y), bytes);
}

ImageView reshaped(Image& image, ImageShape shape) {
  image.reshape(shape);
  return image.view();
}

}  // namespace

struct JpegDecoder::State {
  detail::JpegDecompress jpeg;
  DecodeOptions options;
  bool opened = false;
  Image rows;       // rows as libjpeg writes them: wider than the region when cropped, CMYK when CMYK
  Image converted;  // after CMYK conversion, when an orientation still has to follow
  Image upright;    // after EXIF orientation

  int orientation() const noexcept { return options.apply_exif_orientation ? jpeg.header().orientation : 1; }

  // Decodes `region` (upright coordinates at 1/scale_denom). When `out` is given the pixels end there;
  // otherwise the returned view points into this state's buffers.
  ConstImageView decode(Rect region, int scale_denom, ImageView out);
};

ConstImageView JpegDecoder::State::decode(Rect region, int scale_denom, ImageView out) {
  if (!opened) throw InvalidArgument("JpegDecoder: read before open (each open allows one read)");
  check_scale(scale_denom);
  opened = false;
  const JpegHeader& header = jpeg.header();
  const OutputSpace space = output_space(header, options.color);
  const int stored_width = scaled_size(header.width, scale_denom);
  const int stored_height = scaled_size(header.height, scale_denom);
  const int turn = orientation();
  const bool transposed = turn >= 5;
  const int width = transposed ? stored_height : stored_width;
  const int height = transposed ? stored_width : stored_height;
  if (!region.inside(width, height)) {
    throw InvalidArgument("JpegDecoder: region " + std::to_string(region.width) + "x" +
                          std::to_string(region.height) + "+" + std::to_string(region.x) + "+" +
                          std::to_string(region.y) + " is outside the " + std::to_string(width) + "x" +
                          std::to_string(height) + " image");
  }
  const ImageShape shape{region.height, region.width, space.channels};
  if (!out.empty() && out.shape() != shape)
    throw InvalidArgument("JpegDecoder: output view has the wrong shape");
  const Rect stored = detail::stored_rect(region, turn, stored_width, stored_height);

  jpeg.start(scale_denom, space.jpeg, options.fast);
  if (jpeg.output_width() != stored_width || jpeg.output_height() != stored_height) {
    throw DecodeError(DecodeFailure::corrupt, "libjpeg's output size differs from the header's");
  }
  // Whole rows straight into the caller's pixels: no buffer, no copy.
  if (!out.empty() && turn == 1 && !space.cmyk && stored.width == stored_width) {
    if (stored.y > 0) jpeg.skip_rows(stored.y);
    jpeg.read_rows(out.data, out.stride, stored.height);
    jpeg.close();
    return out;
  }

  int first_column = 0;
  if (stored.x > 0 || stored.width < stored_width) {
    // One extra column on each side: fancy upsampling then sees the same chroma neighbours as in a full
    // decode, which makes the window bit-exact (docs/libjpeg-turbo.md). And at least kMinCropWidth columns: libjpeg
    // falls back to plain (box) upsampling for a component whose cropped row holds 2 samples or fewer.
    constexpr int kMinCropWidth = 32;
    int x0 = std::max(0, stored.x - 1);
    int x1 = std::min(stored_width, stored.right() + 1);
    if (x1 - x0 < kMinCropWidth) {
      x1 = std::min(stored_width, x0 + kMinCropWidth);
      x0 = std::max(0, x1 - kMinCropWidth);
    }
    first_column = jpeg.crop_columns(x0, x1 - x0);  // libjpeg moves x0 left to an iMCU boundary
  }
  rows.reshape({stored.height, jpeg.output_width(), jpeg.output_components()});
  if (stored.y > 0) jpeg.skip_rows(stored.y);
  ImageView delivered = rows.view();
  jpeg.read_rows(delivered.data, delivered.stride, stored.height);
  jpeg.close();  // the rows below the window are never read

  ConstImageView pixels(delivered.at(0, stored.x - first_column),
                        {stored.height, stored.width, delivered.channels}, delivered.stride);
  if (space.cmyk) {
    const ImageShape converted_shape{stored.height, stored.width, space.channels};
    ImageView target = turn == 1 && !out.empty() ? out : reshaped(converted, converted_shape);
    cmyk_to_rgb_or_gray(pixels, jpeg.adobe_marker(), target);
    pixels = target;
  }
  if (turn != 1) {
    ImageView target = !out.empty() ? out : reshaped(upright, shape);
    detail::apply_orientation(pixels, turn, target);
    pixels = target;
  }
  if (!out.empty() && pixels.data != out.data) copy_pixels(pixels, out);
  return out.empty() ? pixels : ConstImageView(out);
}

JpegDecoder::JpegDecoder() : state_(std::make_unique<State>()) {}
JpegDecoder::~JpegDecoder() = default;
JpegDecoder::JpegDecoder(JpegDecoder&&) noexcept = default;
JpegDecoder& JpegDecoder::operator=(JpegDecoder&&) noexcept = default;

const JpegHeader& JpegDecoder::open(std::span<const std::uint8_t> jpeg, const DecodeOptions& options) {
  state_->opened = false;
  state_->options = options;
  state_->jpeg.open(jpeg, options, options.apply_exif_orientation);
  state_->opened = true;
  return state_->jpeg.header();
}

ImageShape JpegDecoder::shape(int scale_denom) const {
  check_scale(scale_denom);
  const JpegHeader& header = state_->jpeg.header();
  if (header.width == 0) throw InvalidArgument("JpegDecoder: no image opened");
  const int width = scaled_size(header.width, scale_denom), height = scaled_size(header.height, scale_denom);
  const int channels = output_space(header, state_->options.color).channels;
  return state_->orientation() >= 5 ? ImageShape{width, height, channels}
                                    : ImageShape{height, width, channels};
}

std::size_t JpegDecoder::memory_estimate(Rect window, int scale_denom) const {
  if (!state_->opened) throw InvalidArgument("JpegDecoder::memory_estimate: no image opened");
  const ImageShape whole = shape(scale_denom);
  const auto scaled = [&](int size) { return static_cast<std::size_t>(scaled_size(size, scale_denom)); };
  const std::size_t rows = static_cast<std::size_t>(std::max(whole.width, whole.height)) *
                           scaled(std::max(window.height, window.width)) * 4;
  const std::size_t pixels = scaled(window.width) * scaled(window.height) * 3 * 2;
  return state_->jpeg.coefficient_bytes() + rows + pixels;
}

DecodeResult JpegDecoder::read(ImageView out, int scale_denom) {
  const ImageShape whole = shape(scale_denom);
  return read_region({0, 0, whole.width, whole.height}, out, scale_denom);
}

DecodeResult JpegDecoder::read_region(Rect region, ImageView out, int scale_denom) {
  if (out.empty()) throw InvalidArgument("JpegDecoder: empty output view");
  state_->decode(region, scale_denom, out);
  return {out.shape(), warnings(), scale_denom, state_->orientation()};
}

ConstImageView JpegDecoder::read_region_view(Rect region, int scale_denom) {
  return state_->decode(region, scale_denom, {});
}

int JpegDecoder::warnings() const noexcept { return state_->jpeg.warnings(); }
int JpegDecoder::orientation() const noexcept { return state_->orientation(); }

JpegHeader read_jpeg_header(std::span<const std::uint8_t> jpeg, bool read_orientation) {
  DecodeOptions options;
  options.max_pixels = std::numeric_limits<std::size_t>::max() / 16;  // only the header is read
  detail::JpegDecompress decompress;
  decompress.open(jpeg, options, read_orientation);
  return decompress.header();
}

int choose_dct_scale(int width, int height, int target_width, int target_height) noexcept {
  for (int denom : {8, 4, 2}) {
    if (width >= denom * target_width && height >= denom * target_height) return denom;
  }
  return 1;
}

DecodeResult decode_jpeg(std::span<const std::uint8_t> jpeg, ImageView out, const DecodeOptions& options) {
  JpegDecoder decoder;
  decoder.open(jpeg, options);
  return decoder.read(out);
}

DecodeResult decode_jpeg(std::span<const std::uint8_t> jpeg, Image& out, const DecodeOptions& options) {
  JpegDecoder decoder;
  decoder.open(jpeg, options);
  out.reshape(decoder.shape());
  return decoder.read(out.view());
}

Image decode_jpeg(std::span<const std::uint8_t> jpeg, const DecodeOptions& options) {
  Image image;
  decode_jpeg(jpeg, image, options);
  return image;
}

DecodeResult decode_jpeg_region(std::span<const std::uint8_t> jpeg, Rect region, ImageView out,
                                const DecodeOptions& options, int scale_denom) {
  JpegDecoder decoder;
  decoder.open(jpeg, options);
  return decoder.read_region(region, out, scale_denom);
}

}  // namespace conveyor::ops
