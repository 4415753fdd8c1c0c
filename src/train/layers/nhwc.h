// Where pixel (n, y, x) of an NHWC activation starts: its channels follow contiguously.
#pragma once

#include <cstddef>

#include "conveyor/train/nn/reference.h"

namespace conveyor::nn::cpu {

inline std::size_t nhwc_offset(const Shape4& s, int n, int y, int x) {
  return ((static_cast<std::size_t>(n) * s.h + y) * s.w + x) * s.c;
}

}  // namespace conveyor::nn::cpu
