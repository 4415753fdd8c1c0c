#include "conveyor/fields/geometry_change.h"

#include <string>

#include "conveyor/error.h"

namespace conveyor::ops {

GeometryChange GeometryChange::crop(int height, int width, Rect window, PadMode pad) noexcept {
  GeometryChange change;
  change.image_height = height;
  change.image_width = width;
  change.window = window;
  change.out_height = window.height;
  change.out_width = window.width;
  change.pad = pad;
  return change;
}

GeometryChange GeometryChange::crop_resize(int height, int width, Rect window, int out_height,
                                           int out_width) noexcept {
  GeometryChange change = crop(height, width, window);
  change.out_height = out_height;
  change.out_width = out_width;
  return change;
}

GeometryChange GeometryChange::resize(int height, int width, int out_height, int out_width) noexcept {
  return crop_resize(height, width, {0, 0, width, height}, out_height, out_width);
}

GeometryChange GeometryChange::pad_by(int height, int width, int top, int bottom, int left, int right,
                                      PadMode pad) noexcept {
  return crop(height, width, {-left, -top, width + left + right, height + top + bottom}, pad);
}

GeometryChange GeometryChange::mirror(int height, int width, bool horizontal) noexcept {
  GeometryChange change;
  change.kind = Kind::mirror;
  change.image_height = height;
  change.image_width = width;
  change.horizontal = horizontal;
  return change;
}

double GeometryChange::map_x(double x) const noexcept {
  if (kind == Kind::mirror) return horizontal ? image_width - x : x;
  return (x - window.x) * out_width / window.width;
}

double GeometryChange::map_y(double y) const noexcept {
  if (kind == Kind::mirror) return horizontal ? y : image_height - y;
  return (y - window.y) * out_height / window.height;
}

void GeometryChange::check() const {
  if (image_height <= 0 || image_width <= 0) throw InvalidArgument("GeometryChange: the image is empty");
  if (kind == Kind::mirror) return;
  if (window.empty()) throw InvalidArgument("GeometryChange: empty window");
  if (out_height <= 0 || out_width <= 0) throw InvalidArgument("GeometryChange: empty output");
  if (resizes() && !window.inside(image_width, image_height))
    throw InvalidArgument("GeometryChange: a window that is resized must lie inside the image (" +
                          std::to_string(image_width) + "x" + std::to_string(image_height) +
                          "); crop or pad first");
}

}  // namespace conveyor::ops
