#include "conveyor/ops/decode_png.h"

#include <spng.h>

#include <cstdlib>
#include <cstring>
#include <opencv2/imgproc.hpp>
#include <string>

#include "conveyor/error.h"
#include "ops/image/cv_view.h"

namespace conveyor::ops {
namespace detail {

// A libspng context, freed with it. Not in the anonymous namespace: PngDecoder::State holds one.
struct SpngContextDeleter {
  void operator()(spng_ctx* ctx) const noexcept { spng_ctx_free(ctx); }
};
using SpngContext = std::unique_ptr<spng_ctx, SpngContextDeleter>;

}  // namespace detail

namespace {

using Context = detail::SpngContext;

constexpr std::uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
// Ancillary chunks (text, ICC profiles, ...) libspng may keep in memory at most: a hostile file cannot make
// it hold more.
constexpr std::size_t kChunkCacheLimit = std::size_t{8} << 20;
// zlib's inflate state and window, and libspng's context: a bound, not a measurement.
constexpr std::size_t kInflateBytes = std::size_t{256} << 10;

DecodeFailure failure_of(int error) {
  switch (error) {
    case SPNG_ESIGNATURE:
      return DecodeFailure::not_png;
    case SPNG_IO_EOF:
    case SPNG_EOF:
    case SPNG_EIDAT_TOO_SHORT:
      return DecodeFailure::truncated;
    case SPNG_EUSER_WIDTH:
    case SPNG_EUSER_HEIGHT:
    case SPNG_ECHUNK_LIMITS:
      return DecodeFailure::too_large;
    case SPNG_EMEM:
      throw std::bad_alloc();
    default:
      return DecodeFailure::corrupt;
  }
}

void check_spng(int error, const char* stage) {
  if (error != 0)
    throw DecodeError(failure_of(error), std::string("png: ") + stage + ": " + spng_strerror(error));
}

// Unpacks 1, 2 or 4-bit samples (most significant bits first) into bytes, optionally scaled to 0-255.
void unpack_row(const std::uint8_t* packed, std::uint8_t* out, int width, int depth, bool scale) {
  const int per_byte = 8 / depth;
  const unsigned mask = (1u << depth) - 1;
  const unsigned factor = scale ? 255u / mask : 1u;
  for (int x = 0; x < width; ++x) {
    const unsigned shift = static_cast<unsigned>(8 - depth * (x % per_byte + 1));
    out[x] = static_cast<std::uint8_t>(((packed[x / per_byte] >> shift) & mask) * factor);
  }
}

}  // namespace

ImageFormat detect_image_format(std::span<const std::uint8_t> bytes) noexcept {
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPngSignature, 8) == 0) return ImageFormat::png;
  if (bytes.size() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8) return ImageFormat::jpeg;
  return ImageFormat::unknown;
}

struct PngDecoder::State {
  detail::SpngContext ctx;
  PngHeader header;
  std::vector<std::uint8_t> scratch;  // the raw rows when they cannot go straight to the output

  spng_ctx* get() const {
    if (!ctx) throw InvalidArgument("PngDecoder: no image is open");
    return ctx.get();
  }
  // Decodes the whole image in libspng's format `format` into scratch; returns the bytes of one row.
  std::size_t decode_to_scratch(int format) {
    std::size_t bytes = 0;
    check_spng(spng_decoded_image_size(get(), format, &bytes), "size");
    scratch.resize(bytes);
    check_spng(spng_decode_image(get(), scratch.data(), bytes, format, 0), "decode");
    return bytes / static_cast<std::size_t>(header.height);
  }
};

PngDecoder::PngDecoder() : state_(std::make_unique<State>()) {}
PngDecoder::~PngDecoder() = default;
PngDecoder::PngDecoder(PngDecoder&&) noexcept = default;
PngDecoder& PngDecoder::operator=(PngDecoder&&) noexcept = default;

const PngHeader& PngDecoder::open(std::span<const std::uint8_t> png, std::size_t max_pixels) {
  state_->ctx.reset();
  if (png.empty()) throw DecodeError(DecodeFailure::empty, "png: no bytes");
  if (detect_image_format(png) != ImageFormat::png)
    throw DecodeError(DecodeFailure::not_png, "png: no PNG signature");
  Context ctx(spng_ctx_new(0));
  if (!ctx) throw std::bad_alloc();
  check_spng(spng_set_png_buffer(ctx.get(), png.data(), png.size()), "open");
  check_spng(spng_set_chunk_limits(ctx.get(), png.size(), kChunkCacheLimit), "open");
  spng_ihdr ihdr{};
  check_spng(spng_get_ihdr(ctx.get(), &ihdr), "header");
  const std::size_t pixels = static_cast<std::size_t>(ihdr.width) * ihdr.height;
  if (pixels > max_pixels)
    throw DecodeError(DecodeFailure::too_large, "png: " + std::to_string(ihdr.width) + "x" +
                                                    std::to_string(ihdr.height) + " is over the limit of " +
                                                    std::to_string(max_pixels) + " pixels");
  if (ihdr.width > 1u << 30 || ihdr.height > 1u << 30)
    throw DecodeError(DecodeFailure::too_large, "png: a side over 2^30 pixels");
  state_->header = {static_cast<int>(ihdr.width), static_cast<int>(ihdr.height), ihdr.bit_depth,
                    ihdr.color_type, ihdr.interlace_method != 0};
  state_->ctx = std::move(ctx);
  return state_->header;
}

ImageShape PngDecoder::image_shape(ColorMode color) const {
  state_->get();
  const PngHeader& h = state_->header;
  const bool one = color == ColorMode::gray || (color == ColorMode::keep && h.gray());
  return {h.height, h.width, one ? 1 : 3};
}

void PngDecoder::read_image(ImageView out, ColorMode color) {
  const ImageShape shape = image_shape(color);
  if (out.shape() != shape) throw InvalidArgument("PngDecoder::read_image: the output's shape differs");
  const PngHeader& h = state_->header;
  if (shape.channels == 3 || h.color_type != 0) {
    // Every colour type into RGB (libspng converts palettes, depths and gray); gray output from a colour
    // PNG is its luma.
    const bool direct = shape.channels == 3 && out.contiguous();
    std::size_t bytes = 0;
    check_spng(spng_decoded_image_size(state_->get(), SPNG_FMT_RGB8, &bytes), "size");
    if (direct) {
      check_spng(spng_decode_image(state_->get(), out.data, bytes, SPNG_FMT_RGB8, 0), "decode");
      return;
    }
    const std::size_t row = state_->decode_to_scratch(SPNG_FMT_RGB8);
    const ConstImageView rgb(state_->scratch.data(), {h.height, h.width, 3},
                             static_cast<std::ptrdiff_t>(row));
    cv::Mat dst = detail::as_mat(out);
    if (shape.channels == 3) {
      detail::as_mat(rgb).copyTo(dst);
    } else {
      cv::cvtColor(detail::as_mat(rgb), dst, cv::COLOR_RGB2GRAY);
    }
    return;
  }
  // Plain gray into one channel: the stored values, 16 bits cut to their high byte, 1-4 bits scaled.
  const std::size_t row = state_->decode_to_scratch(SPNG_FMT_PNG);
  for (int y = 0; y < h.height; ++y) {
    const std::uint8_t* in = state_->scratch.data() + static_cast<std::size_t>(y) * row;
    std::uint8_t* dst = out.row(y);
    if (h.bit_depth == 8) {
      std::memcpy(dst, in, static_cast<std::size_t>(h.width));
    } else if (h.bit_depth == 16) {
      for (int x = 0; x < h.width; ++x) {
        std::uint16_t v;
        std::memcpy(&v, in + 2 * x, 2);
        dst[x] = static_cast<std::uint8_t>(v >> 8);
      }
    } else {
      unpack_row(in, dst, h.width, h.bit_depth, true);
    }
  }
}

MaskShape PngDecoder::mask_shape() const {
  state_->get();
  const PngHeader& h = state_->header;
  if (!h.one_channel())
    throw DecodeError(
        DecodeFailure::unsupported,
        "png: a mask must be one channel of class ids (gray or palette, no alpha); this PNG has "
        "colour type " +
            std::to_string(h.color_type));
  return {h.height, h.width, h.bit_depth == 16 ? MaskType::uint16 : MaskType::uint8};
}

void PngDecoder::read_mask(MaskView out) {
  const MaskShape shape = mask_shape();
  if (out.shape() != shape) throw InvalidArgument("PngDecoder::read_mask: the output's shape differs");
  const PngHeader& h = state_->header;
  const std::size_t row_bytes = static_cast<std::size_t>(h.width) * mask_type_size(shape.type);
  if (h.bit_depth >= 8 && out.stride == static_cast<std::ptrdiff_t>(row_bytes)) {
    std::size_t bytes = 0;
    check_spng(spng_decoded_image_size(state_->get(), SPNG_FMT_PNG, &bytes), "size");
    check_spng(spng_decode_image(state_->get(), out.data, bytes, SPNG_FMT_PNG, 0), "decode");
    return;
  }
  const std::size_t row = state_->decode_to_scratch(SPNG_FMT_PNG);
  for (int y = 0; y < h.height; ++y) {
    const std::uint8_t* in = state_->scratch.data() + static_cast<std::size_t>(y) * row;
    if (h.bit_depth >= 8) {
      std::memcpy(out.row(y), in, row_bytes);
    } else {
      unpack_row(in, out.row(y), h.width, h.bit_depth, false);
    }
  }
}

std::size_t PngDecoder::memory_estimate() const {
  state_->get();
  const PngHeader& h = state_->header;
  const std::size_t pixels = static_cast<std::size_t>(h.width) * static_cast<std::size_t>(h.height);
  // The output (RGB at most), a scratch copy of the raw rows (up to 8 bytes a pixel for 16-bit RGBA), and
  // libspng's row buffers (a few rows of the widest format) with the inflate state.
  return pixels * 3 + pixels * 8 + static_cast<std::size_t>(h.width) * 8 * 4 + kInflateBytes;
}

Image decode_png(std::span<const std::uint8_t> png, ColorMode color) {
  PngDecoder decoder;
  decoder.open(png);
  Image image(decoder.image_shape(color));
  decoder.read_image(image.view(), color);
  return image;
}

Mask decode_png_mask(std::span<const std::uint8_t> png, std::size_t max_pixels) {
  PngDecoder decoder;
  decoder.open(png, max_pixels);
  Mask mask(decoder.mask_shape());
  decoder.read_mask(mask.view());
  return mask;
}

namespace {

std::vector<std::uint8_t> encode(const std::uint8_t* rows, std::ptrdiff_t stride, int width, int height,
                                 int depth, int color_type, std::size_t row_bytes) {
  if (width <= 0 || height <= 0) throw InvalidArgument("encode_png: empty image");
  // libspng reads the image as one contiguous block.
  std::vector<std::uint8_t> packed(row_bytes * static_cast<std::size_t>(height));
  for (int y = 0; y < height; ++y)
    std::memcpy(packed.data() + static_cast<std::size_t>(y) * row_bytes, rows + y * stride, row_bytes);
  Context ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (!ctx) throw std::bad_alloc();
  const auto fail = [](int error) {
    if (error != 0) throw Error(std::string("encode_png: ") + spng_strerror(error));
  };
  fail(spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1));
  spng_ihdr ihdr{static_cast<std::uint32_t>(width),
                 static_cast<std::uint32_t>(height),
                 static_cast<std::uint8_t>(depth),
                 static_cast<std::uint8_t>(color_type),
                 0,
                 0,
                 0};
  fail(spng_set_ihdr(ctx.get(), &ihdr));
  fail(spng_encode_image(ctx.get(), packed.data(), packed.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE));
  std::size_t size = 0;
  int error = 0;
  void* buffer = spng_get_png_buffer(ctx.get(), &size, &error);
  fail(error);
  struct Free {
    void operator()(void* p) const noexcept { std::free(p); }  // NOLINT(cppcoreguidelines-no-malloc)
  };
  const std::unique_ptr<void, Free> owned(buffer);
  const auto* bytes = static_cast<const std::uint8_t*>(buffer);
  return {bytes, bytes + size};
}

}  // namespace

std::vector<std::uint8_t> encode_png(ConstImageView image) {
  int color_type = 0;
  switch (image.channels) {
    case 1:
      color_type = SPNG_COLOR_TYPE_GRAYSCALE;
      break;
    case 3:
      color_type = SPNG_COLOR_TYPE_TRUECOLOR;
      break;
    case 4:
      color_type = SPNG_COLOR_TYPE_TRUECOLOR_ALPHA;
      break;
    default:
      throw InvalidArgument("encode_png: 1, 3 or 4 channels");
  }
  return encode(image.data, image.stride, image.width, image.height, 8, color_type,
                static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.channels));
}

std::vector<std::uint8_t> encode_png(ConstMaskView mask) {
  return encode(mask.data, mask.stride, mask.width, mask.height, mask.type == MaskType::uint16 ? 16 : 8,
                SPNG_COLOR_TYPE_GRAYSCALE, static_cast<std::size_t>(mask.width) * mask.element_size());
}

}  // namespace conveyor::ops
