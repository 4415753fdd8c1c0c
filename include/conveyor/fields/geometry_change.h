// What a geometric op did to a sample's image, drawn once, so that every field of the sample follows it
// (ops::apply_geometry in conveyor/ops/apply_geometry.h; each field type's move() in conveyor/fields/).
//
// Every geometric op of conveyor is one of two changes:
//   window  the part `window` of the image (it may reach outside the image: those pixels are made up by
//           `pad`) becomes an out_width x out_height image: a crop when the sizes agree, else a resize of
//           it (a resized window lies inside the image). Crops, pad, resize and random resized crops.
//   mirror  the image mirrored left-right (horizontal) or top-bottom.
// Coordinates are continuous pixel coordinates: pixel (0, 0) covers [0, 1) x [0, 1), so a point at x in the
// image lands at (x - window.x) * out_width / window.width in the output, and a mirror takes x to width - x.
#pragma once

#include <cstdint>

#include "conveyor/ops/pad.h"
#include "conveyor/ops/rect.h"

namespace conveyor::ops {

struct GeometryChange {
  enum class Kind : std::uint8_t { window, mirror };

  Kind kind = Kind::window;
  int image_height = 0;  // the image before the change
  int image_width = 0;
  Rect window;  // window: the part of the image (in its pixels) that becomes the output
  int out_height = 0;
  int out_width = 0;
  PadMode pad = PadMode::constant;  // window: how pixels outside the image are made up
  bool horizontal = true;           // mirror: left-right; false: top-bottom

  // `window` of a height x width image as it is (a crop; the window may reach outside the image).
  static GeometryChange crop(int height, int width, Rect window, PadMode pad = PadMode::constant) noexcept;
  // `window` (inside the image) resized to out_height x out_width; a window of the output's size is a crop.
  static GeometryChange crop_resize(int height, int width, Rect window, int out_height,
                                    int out_width) noexcept;
  // The whole image resized.
  static GeometryChange resize(int height, int width, int out_height, int out_width) noexcept;
  // Margins added around the image.
  static GeometryChange pad_by(int height, int width, int top, int bottom, int left, int right,
                               PadMode pad = PadMode::constant) noexcept;
  static GeometryChange mirror(int height, int width, bool horizontal) noexcept;

  // The output's size (a mirror keeps the image's).
  int output_height() const noexcept { return kind == Kind::window ? out_height : image_height; }
  int output_width() const noexcept { return kind == Kind::window ? out_width : image_width; }
  // A window that is resized (not a plain crop).
  bool resizes() const noexcept {
    return kind == Kind::window && (window.width != out_width || window.height != out_height);
  }
  // The whole image as it is (what ops::decode hands on): fields have nothing to move, only to decode.
  bool identity() const noexcept {
    return kind == Kind::window && window == Rect{0, 0, image_width, image_height} &&
           out_width == image_width && out_height == image_height;
  }
  // Where the image's point (x, y) lands in the output.
  double map_x(double x) const noexcept;
  double map_y(double y) const noexcept;

  // Throws InvalidArgument for an empty image, window or output, or a resized window reaching outside the
  // image; ops::apply_geometry checks before anything moves.
  void check() const;
};

}  // namespace conveyor::ops
