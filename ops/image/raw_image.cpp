#include "conveyor/ops/raw_image.h"

#include <cctype>
#include <cstring>
#include <string>

#include "conveyor/error.h"

namespace conveyor::ops {
namespace {

bool space(std::uint8_t c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Reads one decimal field of a Netpbm header at `at`, skipping white space and '#' comments before it.
int header_field(std::span<const std::uint8_t> bytes, std::size_t& at) {
  for (;;) {
    while (at < bytes.size() && space(bytes[at])) ++at;
    if (at < bytes.size() && bytes[at] == '#') {
      while (at < bytes.size() && bytes[at] != '\n') ++at;
      continue;
    }
    break;
  }
  long long value = 0;
  const std::size_t first = at;
  while (at < bytes.size() && std::isdigit(bytes[at]) && at - first < 9)
    value = value * 10 + (bytes[at++] - '0');
  if (at == first || (at < bytes.size() && std::isdigit(bytes[at])))
    throw DecodeError(DecodeFailure::corrupt, "raw image: a header field is not a number below 10^9");
  return static_cast<int>(value);
}

}  // namespace

bool is_raw_image(std::span<const std::uint8_t> bytes) noexcept {
  return bytes.size() >= 3 && bytes[0] == 'P' && (bytes[1] == '6' || bytes[1] == '5') && space(bytes[2]);
}

ConstImageView read_raw_image(std::span<const std::uint8_t> bytes, const DecodeOptions& options) {
  if (bytes.empty()) throw DecodeError(DecodeFailure::empty, "raw image: no bytes");
  if (!is_raw_image(bytes)) throw DecodeError(DecodeFailure::corrupt, "raw image: not a binary PPM or PGM");
  const int channels = bytes[1] == '6' ? 3 : 1;
  std::size_t at = 2;
  const int width = header_field(bytes, at);
  const int height = header_field(bytes, at);
  const int maximum = header_field(bytes, at);
  if (width <= 0 || height <= 0) throw DecodeError(DecodeFailure::corrupt, "raw image: an empty image");
  if (maximum != 255)
    throw DecodeError(DecodeFailure::corrupt,
                      "raw image: maximum value " + std::to_string(maximum) + " (only 8-bit, 255, is read)");
  if (at >= bytes.size() || !space(bytes[at]))
    throw DecodeError(DecodeFailure::truncated, "raw image: the header ends without its pixels");
  ++at;  // exactly one white-space byte between the header and the pixels
  const auto pixels = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  if (pixels > options.max_pixels)
    throw DecodeError(DecodeFailure::too_large, "raw image: " + std::to_string(width) + " x " +
                                                    std::to_string(height) + " is over the pixel limit");
  const bool asked_rgb = options.color == ColorMode::rgb, asked_gray = options.color == ColorMode::gray;
  if ((channels == 3 && asked_gray) || (channels == 1 && asked_rgb))
    throw DecodeError(DecodeFailure::unsupported,
                      std::string("raw image: stored ") + (channels == 3 ? "RGB" : "gray") + ", asked for " +
                          (asked_gray ? "gray" : "RGB") + " (prepare it that way)");
  const std::size_t need = pixels * static_cast<std::size_t>(channels);
  if (bytes.size() - at < need)
    throw DecodeError(DecodeFailure::truncated, "raw image: " + std::to_string(bytes.size() - at) + " of " +
                                                    std::to_string(need) + " pixel bytes");
  return ConstImageView(bytes.data() + at, ImageShape{height, width, channels});
}

std::vector<std::uint8_t> encode_raw_image(ConstImageView image) {
  if (image.empty() || (image.channels != 1 && image.channels != 3))
    throw InvalidArgument("encode_raw_image: a non-empty image of 1 or 3 channels");
  const std::string header = std::string(image.channels == 3 ? "P6\n" : "P5\n") +
                             std::to_string(image.width) + " " + std::to_string(image.height) + "\n255\n";
  const std::size_t row = static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.channels);
  std::vector<std::uint8_t> out(header.size() + row * static_cast<std::size_t>(image.height));
  std::memcpy(out.data(), header.data(), header.size());
  for (int y = 0; y < image.height; ++y)
    std::memcpy(out.data() + header.size() + row * static_cast<std::size_t>(y), image.row(y), row);
  return out;
}

}  // namespace conveyor::ops
