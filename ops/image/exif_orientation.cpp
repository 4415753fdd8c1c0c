#include "ops/image/exif_orientation.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <opencv2/core.hpp>
#include <utility>

#include "conveyor/error.h"
#include "ops/image/cv_view.h"

namespace conveyor::ops::detail {
namespace {

constexpr std::uint16_t kOrientationTag = 0x0112;
constexpr std::uint16_t kTypeShort = 3;

// Reads TIFF integers in the byte order the segment declares.
struct TiffReader {
  std::span<const std::uint8_t> tiff;
  bool big_endian;

  bool fits(std::size_t offset, std::size_t size) const noexcept {
    return offset <= tiff.size() && size <= tiff.size() - offset;
  }
  std::uint16_t u16(std::size_t offset) const noexcept {
    const std::uint8_t* p = tiff.data() + offset;
    return big_endian ? static_cast<std::uint16_t>(p[0] << 8 | p[1])
                      : static_cast<std::uint16_t>(p[1] << 8 | p[0]);
  }
  std::uint32_t u32(std::size_t offset) const noexcept {
    const std::uint32_t hi = u16(offset + (big_endian ? 0 : 2)), lo = u16(offset + (big_endian ? 2 : 0));
    return hi << 16 | lo;
  }
};

}  // namespace

int exif_orientation(std::span<const std::uint8_t> app1) noexcept {
  static constexpr std::uint8_t kExif[6] = {'E', 'x', 'i', 'f', 0, 0};
  if (app1.size() < sizeof kExif + 8 || std::memcmp(app1.data(), kExif, sizeof kExif) != 0) return 0;
  const std::span<const std::uint8_t> tiff = app1.subspan(sizeof kExif);
  TiffReader reader{tiff, false};
  if (tiff[0] == 'M' && tiff[1] == 'M') {
    reader.big_endian = true;
  } else if (!(tiff[0] == 'I' && tiff[1] == 'I')) {
    return 0;
  }
  if (reader.u16(2) != 42) return 0;
  const std::size_t ifd = reader.u32(4);
  if (!reader.fits(ifd, 2)) return 0;
  const std::size_t entries = reader.u16(ifd);
  for (std::size_t i = 0; i < entries; ++i) {
    const std::size_t entry = ifd + 2 + 12 * i;
    if (!reader.fits(entry, 12)) return 0;
    if (reader.u16(entry) != kOrientationTag) continue;
    if (reader.u16(entry + 2) != kTypeShort || reader.u32(entry + 4) < 1) return 0;
    const int value = reader.u16(entry + 8);
    return value >= 1 && value <= 8 ? value : 0;
  }
  return 0;
}

Rect stored_rect(Rect upright, int orientation, int stored_width, int stored_height) noexcept {
  // Where the upright pixel (x, y) comes from in the stored image, for the two inclusive corners.
  const auto source = [&](int x, int y) -> std::pair<int, int> {
    const int w = stored_width - 1, h = stored_height - 1;
    switch (orientation) {
      case 2:
        return {w - x, y};
      case 3:
        return {w - x, h - y};
      case 4:
        return {x, h - y};
      case 5:
        return {y, x};
      case 6:
        return {y, h - x};
      case 7:
        return {w - y, h - x};
      case 8:
        return {w - y, x};
      default:
        return {x, y};
    }
  };
  const auto [ax, ay] = source(upright.x, upright.y);
  const auto [bx, by] = source(upright.right() - 1, upright.bottom() - 1);
  return {std::min(ax, bx), std::min(ay, by), std::abs(ax - bx) + 1, std::abs(ay - by) + 1};
}

void apply_orientation(ConstImageView stored, int orientation, ImageView upright) {
  const bool transposed = orientation >= 5;
  const ImageShape expected =
      transposed ? ImageShape{stored.width, stored.height, stored.channels} : stored.shape();
  if (upright.shape() != expected) throw InvalidArgument("apply_orientation: output shape does not match");
  const cv::Mat src = as_mat(stored);
  cv::Mat dst = as_mat(upright);
  switch (orientation) {
    case 2:
      cv::flip(src, dst, 1);
      break;
    case 3:
      cv::flip(src, dst, -1);
      break;
    case 4:
      cv::flip(src, dst, 0);
      break;
    case 5:
      cv::transpose(src, dst);
      break;
    case 6:
      cv::rotate(src, dst, cv::ROTATE_90_CLOCKWISE);
      break;
    case 7:
      cv::transpose(src, dst);
      cv::flip(dst, dst, -1);
      break;
    case 8:
      cv::rotate(src, dst, cv::ROTATE_90_COUNTERCLOCKWISE);
      break;
    default:
      src.copyTo(dst);
      break;
  }
}

}  // namespace conveyor::ops::detail
