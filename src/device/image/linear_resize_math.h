// Bilinear resizing of 8-bit pixels exactly as OpenCV's cv::resize with INTER_LINEAR does it (the CPU
// path's resize), written once for the GPU kernel and for the CPU test that proves it equal to OpenCV.
//
// OpenCV works in fixed point: each output column and row has two source indices and two weights of 11
// bits (2048 = 1), from the half-pixel-centre mapping x_src = (x + 0.5) * scale - 0.5 computed in double
// and rounded to float. A horizontal pass makes S = p0 * w0 + p1 * w1 per row; the vertical pass, in
// OpenCV's SIMD form (which the x86 build runs), is ((S0 >> 4) * v0 >> 16) + ((S1 >> 4) * v1 >> 16),
// rounded by (+2) >> 2 and saturated. At the edges the horizontal weights are clamped to (2048, 0) while the
// vertical ones are kept and only the row indices are clamped, as OpenCV does; the two differ in the
// rounding of the last bit, which is why both are spelled out here.
#pragma once

#include <cmath>

#include "src/device/exact_arith.h"

namespace conveyor::cuda {

// The two source pixels of one output column (or row) and their 11-bit weights.
struct LinearTap {
  int first = 0;
  int second = 0;
  int weight_first = 2048;
  int weight_second = 0;
};

// Source pixels per output pixel along one axis: OpenCV's 1 / (target / source), in double.
CONVEYOR_HOST_DEVICE double linear_scale(int source, int target) {
  return exact::div(1.0, exact::div(static_cast<double>(target), static_cast<double>(source)));
}

namespace linear_detail {

// Where output index `d` samples the source, as OpenCV computes it: the float position, split into the
// integer index and the fraction.
CONVEYOR_HOST_DEVICE void source_position(int d, double scale, int& index, float& fraction) {
  const float position = static_cast<float>(exact::sub(exact::mul(static_cast<double>(d) + 0.5, scale), 0.5));
  index = static_cast<int>(floorf(position));
  fraction = exact::sub(position, static_cast<float>(index));
}

// saturate_cast<short>(w * 2048) for w in [0, 1]: round half to even.
CONVEYOR_HOST_DEVICE int fixed_weight(float w) { return static_cast<int>(rintf(exact::mul(w, 2048.0f))); }

CONVEYOR_HOST_DEVICE int clamp_index(int i, int size) { return i < 0 ? 0 : (i >= size ? size - 1 : i); }

}  // namespace linear_detail

// Output column `d` of `size` source columns: at the left and right edges the weight moves to the edge pixel.
CONVEYOR_HOST_DEVICE LinearTap horizontal_tap(int d, double scale, int size) {
  int index = 0;
  float fraction = 0.0f;
  linear_detail::source_position(d, scale, index, fraction);
  if (index < 0) {
    index = 0;
    fraction = 0.0f;
  }
  if (index >= size - 1) {
    index = size - 1;
    fraction = 0.0f;
  }
  LinearTap tap;
  tap.first = index;
  tap.second = index + 1 < size ? index + 1 : size - 1;
  tap.weight_first = linear_detail::fixed_weight(exact::sub(1.0f, fraction));
  tap.weight_second = linear_detail::fixed_weight(fraction);
  return tap;
}

// Output row `d` of `size` source rows: the weights stay, the rows are clamped to the image.
CONVEYOR_HOST_DEVICE LinearTap vertical_tap(int d, double scale, int size) {
  int index = 0;
  float fraction = 0.0f;
  linear_detail::source_position(d, scale, index, fraction);
  LinearTap tap;
  tap.first = linear_detail::clamp_index(index, size);
  tap.second = linear_detail::clamp_index(index + 1, size);
  tap.weight_first = linear_detail::fixed_weight(exact::sub(1.0f, fraction));
  tap.weight_second = linear_detail::fixed_weight(fraction);
  return tap;
}

// One output value from the four source values around it: top row (top_first, top_second), bottom row
// (bottom_first, bottom_second).
CONVEYOR_HOST_DEVICE int linear_blend(int top_first, int top_second, int bottom_first, int bottom_second,
                                      const LinearTap& x, const LinearTap& y) {
  const int top = top_first * x.weight_first + top_second * x.weight_second;
  const int bottom = bottom_first * x.weight_first + bottom_second * x.weight_second;
  const int sum = (((top >> 4) * y.weight_first) >> 16) + (((bottom >> 4) * y.weight_second) >> 16);
  const int value = (sum + 2) >> 2;
  return value < 0 ? 0 : (value > 255 ? 255 : value);
}

}  // namespace conveyor::cuda
