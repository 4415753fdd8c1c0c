// Images stored decoded: binary PPM and PGM (Netpbm "P6" RGB, "P5" gray: a short text header, then the
// pixels as bytes). A data set prepared this way (data/make_shards --store raw, at a reduced size) costs no
// decoding at all; the decode ops (sample_ops.h) read such a sample as they read a JPEG, and PIL or a few
// lines of numpy read the same files on the PyTorch side.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "conveyor/image.h"
#include "conveyor/ops/decode_jpeg.h"

namespace conveyor::ops {

// Whether `bytes` start like a binary PPM or PGM ("P6" or "P5" and white space).
bool is_raw_image(std::span<const std::uint8_t> bytes) noexcept;

// The pixels of a binary PPM (3 channels) or PGM (1 channel) with a maximum value of 255, viewed in place:
// valid while `bytes` are. options.color must agree with what is stored (rgb or keep for PPM, gray or keep
// for PGM): a conversion would need a copy, and a prepared data set is made in the form it is read in.
// Throws DecodeError: corrupt (a malformed header or another maximum value), truncated (fewer bytes than the
// header promises), too_large (over options.max_pixels), unsupported (the colour asked for differs).
ConstImageView read_raw_image(std::span<const std::uint8_t> bytes, const DecodeOptions& options = {});

// `image` (1 or 3 channels) as a binary PGM or PPM.
std::vector<std::uint8_t> encode_raw_image(ConstImageView image);

}  // namespace conveyor::ops
