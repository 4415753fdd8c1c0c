// Resizing 8-bit images with OpenCV.
#pragma once

#include <cstdint>

#include "conveyor/image.h"

namespace conveyor::ops {

enum class Interpolation : std::uint8_t {
  nearest,
  linear,  // bilinear, half-pixel centres (cv::INTER_LINEAR, torchvision's BILINEAR without antialias)
  area,    // averages the source pixels each output pixel covers (cv::INTER_AREA); best for shrinking
};

// Resizes `image` to the shape of `out` (same number of channels). Same size: a copy.
void resize(ConstImageView image, ImageView out, Interpolation interpolation = Interpolation::linear);

}  // namespace conveyor::ops
