// Padding: a border around an image, constant or mirrored.
#pragma once

#include <cstdint>

#include "conveyor/image.h"

namespace conveyor::ops {

// How pixels outside the image are made up (numpy / torch names).
enum class PadMode : std::uint8_t {
  constant,   // a fixed value
  edge,       // the nearest edge pixel repeated: aaa|abcd|ddd
  reflect,    // mirrored without repeating the edge: dcb|abcd|cba (torch 'reflect')
  symmetric,  // mirrored with the edge repeated: cba|abcd|dcb
};

// The image with `top`, `bottom`, `left`, `right` pixels added; `out` must be
// (height + top + bottom) x (width + left + right). Mirrors wrap around when a margin exceeds the image.
void pad(ConstImageView image, ImageView out, int top, int bottom, int left, int right,
         PadMode mode = PadMode::constant, std::uint8_t value = 0);

// The image centred in `out` (at least as large in both directions), the margins made up by `mode`; odd
// leftovers go to the bottom and right.
void pad_to(ConstImageView image, ImageView out, PadMode mode = PadMode::constant, std::uint8_t value = 0);

}  // namespace conveyor::ops
