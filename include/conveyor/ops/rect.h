// A window of an image, in pixels: where to crop, which part of a JPEG to decode.
#pragma once

namespace conveyor::ops {

// Columns [x, x + width) and rows [y, y + height).
struct Rect {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;

  int right() const noexcept { return x + width; }
  int bottom() const noexcept { return y + height; }
  bool empty() const noexcept { return width <= 0 || height <= 0; }
  // True when the rectangle lies inside a width x height image.
  bool inside(int image_width, int image_height) const noexcept {
    return x >= 0 && y >= 0 && width > 0 && height > 0 && x + width <= image_width &&
           y + height <= image_height;
  }
  friend bool operator==(const Rect&, const Rect&) = default;
};

}  // namespace conveyor::ops
