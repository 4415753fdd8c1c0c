#include "conveyor/ops/field_geometry.h"

#include <algorithm>
#include <cstring>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <string>

#include "conveyor/error.h"
#include "ops/image/cv_view.h"

namespace conveyor::ops {
namespace {

// crop_copy (crop.cpp) for class ids of type T: rows and columns outside the mask are `fill` or mapped
// back inside by the border rule, the part inside is one memcpy per row.
template <class T>
void copy_window(ConstMaskView mask, Rect window, MaskView out, PadMode mode, T fill) {
  const int border = detail::cv_border(mode);
  const bool constant = mode == PadMode::constant;
  const int inside_begin = std::clamp(window.x, 0, mask.width);
  const int inside_end = std::max(inside_begin, std::clamp(window.right(), 0, mask.width));
  const int left = inside_begin - window.x;
  for (int oy = 0; oy < window.height; ++oy) {
    T* dst = reinterpret_cast<T*>(out.row(oy));
    int sy = window.y + oy;
    if (sy < 0 || sy >= mask.height) {
      if (constant) {
        std::fill_n(dst, window.width, fill);
        continue;
      }
      sy = cv::borderInterpolate(sy, mask.height, border);
    }
    const T* src = reinterpret_cast<const T*>(mask.row(sy));
    for (int ox = 0; ox < window.width; ++ox) {
      if (ox == left && inside_end > inside_begin) {
        std::memcpy(dst + ox, src + inside_begin,
                    static_cast<std::size_t>(inside_end - inside_begin) * sizeof(T));
        ox += inside_end - inside_begin - 1;
        continue;
      }
      dst[ox] = constant ? fill : src[cv::borderInterpolate(window.x + ox, mask.width, border)];
    }
  }
}

}  // namespace

void crop_resize_mask(ConstMaskView mask, Rect window, MaskView out, PadMode mode, std::uint16_t fill) {
  if (mask.empty() || out.empty()) throw InvalidArgument("crop_resize_mask: empty mask");
  if (mask.type != out.type) throw InvalidArgument("crop_resize_mask: the output's type differs");
  if (window.empty()) throw InvalidArgument("crop_resize_mask: empty window");
  if (window.width == out.width && window.height == out.height) {
    if (mask.type == MaskType::uint16) {
      copy_window<std::uint16_t>(mask, window, out, mode, fill);
    } else {
      if (fill > 255 && mode == PadMode::constant && !window.inside(mask.width, mask.height))
        throw InvalidArgument("crop_resize_mask: the fill " + std::to_string(fill) +
                              " does not fit an 8-bit mask (FieldOptions::mask_fill)");
      copy_window<std::uint8_t>(mask, window, out, mode, static_cast<std::uint8_t>(fill));
    }
    return;
  }
  if (!window.inside(mask.width, mask.height))
    throw InvalidArgument("crop_resize_mask: a window that is resized must lie inside the mask");
  const ConstMaskView cropped(
      mask.row(window.y) + static_cast<std::ptrdiff_t>(window.x) * mask.element_size(),
      {window.height, window.width, mask.type}, mask.stride);
  cv::Mat dst = detail::as_mat(out);
  cv::resize(detail::as_mat(cropped), dst, dst.size(), 0, 0, cv::INTER_NEAREST_EXACT);
  if (dst.data != out.data) throw Error("crop_resize_mask: OpenCV reallocated the output");
}

bool crop_resize_box(Box& box, Rect window, int out_width, int out_height,
                     const FieldOptions& options) noexcept {
  const double sx = static_cast<double>(out_width) / window.width;
  const double sy = static_cast<double>(out_height) / window.height;
  const double x0 = (box.x0 - window.x) * sx, x1 = (box.x1 - window.x) * sx;
  const double y0 = (box.y0 - window.y) * sy, y1 = (box.y1 - window.y) * sy;
  const double mapped = std::max(0.0, x1 - x0) * std::max(0.0, y1 - y0);
  const double cx0 = std::clamp(x0, 0.0, static_cast<double>(out_width));
  const double cx1 = std::clamp(x1, 0.0, static_cast<double>(out_width));
  const double cy0 = std::clamp(y0, 0.0, static_cast<double>(out_height));
  const double cy1 = std::clamp(y1, 0.0, static_cast<double>(out_height));
  const double visible = std::max(0.0, cx1 - cx0) * std::max(0.0, cy1 - cy0);
  box = {static_cast<float>(cx0), static_cast<float>(cy0), static_cast<float>(cx1), static_cast<float>(cy1)};
  return visible > 0 && visible >= options.min_box_area && visible >= options.min_box_visibility * mapped;
}

void crop_resize_boxes(BoxList& boxes, Rect window, int out_width, int out_height,
                       const FieldOptions& options) {
  if (boxes.empty()) return;
  if (window.empty() || out_width <= 0 || out_height <= 0)
    throw InvalidArgument("crop_resize_boxes: empty window");
  const std::span<Box> all = boxes.boxes();
  boxes.keep_if(
      [&](std::size_t i) { return crop_resize_box(all[i], window, out_width, out_height, options); });
}

void flip_mask_horizontal(MaskView mask) {
  if (mask.empty()) throw InvalidArgument("flip_mask_horizontal: empty mask");
  cv::Mat mat = detail::as_mat(mask);
  cv::flip(mat, mat, 1);
}

void flip_mask_vertical(MaskView mask) {
  if (mask.empty()) throw InvalidArgument("flip_mask_vertical: empty mask");
  cv::Mat mat = detail::as_mat(mask);
  cv::flip(mat, mat, 0);
}

void flip_boxes_horizontal(BoxList& boxes, int width) {
  for (Box& box : boxes.boxes())
    box = {static_cast<float>(width) - box.x1, box.y0, static_cast<float>(width) - box.x0, box.y1};
}

void flip_boxes_vertical(BoxList& boxes, int height) {
  for (Box& box : boxes.boxes())
    box = {box.x0, static_cast<float>(height) - box.y1, box.x1, static_cast<float>(height) - box.y0};
}

}  // namespace conveyor::ops
