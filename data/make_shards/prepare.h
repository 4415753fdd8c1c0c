// What make_shards does to each image when asked to prepare a data set (issue 36, "less work per image, by
// the user's choice"), as FFCV does: images whose longer side is over a maximum are shrunk to it and
// re-encoded at a chosen JPEG quality, or stored decoded (binary PPM: conveyor/ops/raw_image.h), so that a
// run decodes smaller images, or none. Everything after the decode (the random crop, the augmentation) is
// left to the pipeline: a prepared set is the same data set, smaller.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace conveyor::data {

struct Preparation {
  int max_side = 0;  // 0: every image keeps its size
  int quality = 0;   // JPEG quality of re-encoded images; 0: 90
  bool raw = false;  // store the decoded pixels (PPM) instead of a JPEG

  // Whether images change at all: without this the shards hold the files' own bytes.
  bool changes_images() const noexcept { return max_side > 0 || quality > 0 || raw; }
  // The member extension of a sample's image.
  const char* extension() const noexcept { return raw ? "ppm" : "jpg"; }
  // "max side 256, JPEG quality 90" for logs and the index.
  std::string describe() const;
};

// The shape an image of width x height takes: its longer side at most max_side (kept when 0 or shorter),
// the aspect ratio kept, each side at least 1.
struct PreparedSize {
  int width = 0, height = 0;
};
PreparedSize prepared_size(int width, int height, int max_side) noexcept;

// `jpeg` as the prepared set stores it: decoded (RGB), shrunk with area interpolation when it is larger
// than max_side, then encoded as asked. Throws conveyor::DecodeError when the JPEG cannot be decoded.
std::vector<std::uint8_t> prepare_image(std::span<const std::uint8_t> jpeg, const Preparation& preparation);

}  // namespace conveyor::data
