// JPEGs that users' folders hold and the shared test support does not make: CMYK, arithmetic-coded,
// edited headers (12-bit precision, a declared size of 65,500 x 65,500), and the offsets where a file can
// be cut (inside the header, inside the scan, just before the end-of-image marker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace conveyor::testing {

using Bytes = std::vector<std::uint8_t>;

// A picture encoded by TurboJPEG from CMYK pixels (tjCompress2 with TJPF_CMYK: stored as YCCK with an
// Adobe marker).
Bytes make_cmyk_jpeg(int height, int width, std::uint64_t seed = 1);

// A picture encoded through the libjpeg API with arithmetic entropy coding (arith_code = TRUE).
Bytes make_arithmetic_jpeg(int height, int width, std::uint64_t seed = 1);

// A progressive picture (1 or 3 channels) whose scan script sends the DC coefficients and only a coarse
// first band of AC coefficients, never refined: a valid file (libjpeg's encoder accepts the script) that
// a decoder completes with zeros, and the one case where libjpeg applies its block smoothing.
Bytes make_incomplete_progressive_jpeg(int height, int width, int channels, std::uint64_t seed = 1);

// A side x side progressive RGB JPEG (4:2:0) of the kind that fills a decoder's memory: libjpeg keeps the
// whole image's coefficients while it reads the scans, about 3 bytes a pixel (270 MB at 9,500). Every row
// is the same one (a ramp with texture), so the file is small and quick to make and its pixels are known.
Bytes make_huge_progressive_jpeg(int side, std::uint64_t seed = 1);

// A baseline RGB picture with 4:4:4 sampling (no chroma subsampling).
Bytes make_444_jpeg(int height, int width, std::uint64_t seed = 1);

// The JPEG with its frame header's sample precision set to `precision` (8 is what baseline allows).
Bytes with_precision(Bytes jpeg, int precision);
// The JPEG with its frame header declaring width x height (the pixel data stays what it was).
Bytes with_declared_size(Bytes jpeg, int width, int height);

// Offset of the frame header's marker (SOF0..SOF15).
std::size_t frame_offset(std::span<const std::uint8_t> jpeg);
// Offset of the first byte of entropy-coded data (just after the first SOS segment).
std::size_t scan_data_offset(std::span<const std::uint8_t> jpeg);
// Offset of the final end-of-image marker (FF D9); the file's size when it has none at its end.
std::size_t end_of_image_offset(std::span<const std::uint8_t> jpeg);

// The first `count` bytes.
Bytes first_bytes(const Bytes& bytes, std::size_t count);

}  // namespace conveyor::testing
