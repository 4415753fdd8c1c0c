// JPEG encoding on libjpeg-turbo (TurboJPEG): what preparing a data set at a lower size and quality writes
// (data/make_shards --max-side --quality), and the synthetic images a GPU decoder warms up on.
#pragma once

#include <cstdint>
#include <vector>

#include "conveyor/image.h"

namespace conveyor::ops {

// How the chroma planes are stored (TurboJPEG's TJSAMP_*). 4:2:0 is what cameras and ImageNet use; 4:1:1 is
// a form nvJPEG's hardware decoder refuses.
enum class ChromaSubsampling : std::uint8_t { s444, s422, s420, s411, gray };

struct EncodeOptions {
  int quality = 90;  // 1-100
  ChromaSubsampling subsampling = ChromaSubsampling::s420;
  bool progressive = false;  // a progressive scan script instead of one baseline scan
};

// Encodes `image` (1 or 3 channels, any stride). Throws InvalidArgument for other channel counts, an empty
// image or a quality out of range, Error when libjpeg-turbo fails.
std::vector<std::uint8_t> encode_jpeg(ConstImageView image, const EncodeOptions& options = {});

}  // namespace conveyor::ops
