// JPEG fixtures for the ops tests: reference decodes by TurboJPEG, and JPEGs the shared test support
// cannot make (CMYK, arithmetic coding, many scans, EXIF orientation, edited headers).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "conveyor/image.h"
#include "conveyor/ops/rect.h"

namespace conveyor::testing {

// tjDecompress2 with its defaults (accurate DCT, fancy upsampling), or its fast flags, at 1/scale_denom.
// channels: 1 (gray), 3 (RGB) or 4 (CMYK as stored).
Image tj_decode(std::span<const std::uint8_t> jpeg, int channels, int scale_denom = 1, bool fast = false);

// A 4-channel picture encoded by TurboJPEG as YCCK with an Adobe marker (values stored as given).
std::vector<std::uint8_t> encode_cmyk_jpeg(ConstImageView cmyk, int quality = 90);

struct LibjpegEncoding {
  bool arithmetic = false;
  bool plain_cmyk_without_adobe = false;  // a 4-channel input coded as CMYK with no Adobe marker
  int scans_per_coefficient = 0;          // > 0: a progressive script with one scan per AC coefficient
                                          // and component, refined in this many steps
};
// The image encoded through the libjpeg API (RGB, gray or CMYK input).
std::vector<std::uint8_t> encode_with_libjpeg(ConstImageView image, const LibjpegEncoding& how,
                                              int quality = 90);

// The JPEG with an EXIF APP1 segment carrying `orientation`, inserted right after SOI.
std::vector<std::uint8_t> with_exif_orientation(std::vector<std::uint8_t> jpeg, int orientation,
                                                bool big_endian = false);
// The JPEG with its SOF marker replaced by `sof` (0xC0..0xCF) and the given sample precision.
std::vector<std::uint8_t> with_frame(std::vector<std::uint8_t> jpeg, std::uint8_t sof, int precision);
// The JPEG with the frame header declaring another size (the pixel data stays what it was).
std::vector<std::uint8_t> with_declared_size(std::vector<std::uint8_t> jpeg, int width, int height);
// Offset of the first byte of entropy-coded data (just after the first SOS segment).
std::size_t scan_data_offset(std::span<const std::uint8_t> jpeg);

// A copy of the window of an image.
Image copy_of(ConstImageView image, ops::Rect window);

}  // namespace conveyor::testing
