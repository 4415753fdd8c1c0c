// The geometric ops' kernels for a sample's other fields (conveyor/fields.h): what a crop, a resize, a pad
// or a flip of the image does to its mask and its boxes. Every geometric op of conveyor is "take `window`
// of the image (it may reach outside, then padded) and resize it to the output", or a flip; these apply
// the same window to a mask (nearest neighbour: class ids are never blended) and to boxes (corners mapped,
// clipped, small leftovers dropped).
#pragma once

#include <cstdint>

#include "conveyor/boxes.h"
#include "conveyor/fields.h"
#include "conveyor/mask.h"
#include "conveyor/ops/pad.h"
#include "conveyor/ops/rect.h"

namespace conveyor::ops {

// `window` of `mask` into `out`: a plain copy when the sizes agree (the window may then reach outside the
// mask: those pixels are `fill` under PadMode::constant, mirrored or repeated under the other modes, as
// crop_copy does for images); otherwise resized by nearest neighbour with pixel centres aligned as the
// image's linear resize (output pixel x takes the mask pixel under window.x + (x + 0.5) * window.width /
// out.width, OpenCV's INTER_NEAREST_EXACT), and the window must lie inside the mask.
void crop_resize_mask(ConstMaskView mask, Rect window, MaskView out, PadMode mode = PadMode::constant,
                      std::uint16_t fill = 0);

// One box of an image of which `window` becomes an out_width x out_height image, mapped and clipped as
// crop_resize_boxes does; true when it stays by options' rule.
bool crop_resize_box(Box& box, Rect window, int out_width, int out_height,
                     const FieldOptions& options) noexcept;

// Boxes of an image of which `window` becomes an out_width x out_height image: each corner maps to
// (x - window.x) * out_width / window.width (likewise y), then the box is clipped to the output; a box
// whose clipped area is below options.min_box_area, or below options.min_box_visibility times its mapped
// area before clipping, is dropped with its class.
void crop_resize_boxes(BoxList& boxes, Rect window, int out_width, int out_height,
                       const FieldOptions& options);

// Mirrors in place.
void flip_mask_horizontal(MaskView mask);
void flip_mask_vertical(MaskView mask);
// Mirrors boxes within an image `width` wide (x -> width - x), or `height` high.
void flip_boxes_horizontal(BoxList& boxes, int width);
void flip_boxes_vertical(BoxList& boxes, int height);

}  // namespace conveyor::ops
