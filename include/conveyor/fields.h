// A sample's fields besides its image and label: a segmentation mask, boxes with classes, multi-label tags.
// Which ones a source gives (FieldSet), and the rules the geometric ops follow for them (FieldOptions).
//
// How fields move (torchvision v2's shape): a geometric op (random resized crop, crops, pad, resize, flips)
// draws its random parameters once from the sample's seed, then applies them to every field by type: the
// image as before (interpolated), the mask by nearest neighbour (class ids are never blended; pixels made
// up outside the image get FieldOptions::mask_fill under constant padding), the boxes by mapping their
// corners, clipping them to the output and dropping those left too small (with their classes). Colour ops
// touch the image only. A sample without these fields costs nothing more than before.
#pragma once

#include <cstdint>

namespace conveyor {

// The fields a source gives (besides the image and the label every source gives).
struct FieldSet {
  bool mask = false;   // Sample::encoded_mask: a PNG of class ids per pixel
  bool boxes = false;  // Sample::boxes: boxes with classes (and crowd flags)
  bool tags = false;   // Sample::tags: class ids of a multi-label sample
  friend bool operator==(const FieldSet&, const FieldSet&) = default;
};

// What the geometric ops do to masks and boxes (PipelineOptions::fields).
struct FieldOptions {
  // The class id of mask pixels that a geometric op makes up (pad, and crops that reach outside the image,
  // under constant padding): the id the loss ignores, e.g. 255 for VOC and ADE20K style sets.
  std::uint16_t mask_fill = 255;
  // After each geometric op, a box whose area inside the output is below min_box_area (in output pixels
  // squared) or below min_box_visibility times its whole area after the op (the share of it that stayed in
  // the picture) is dropped, with its class and flag. The defaults drop boxes that leave the picture (or
  // keep less than one pixel's area) and nothing else.
  double min_box_area = 1.0;
  double min_box_visibility = 0.0;
};

}  // namespace conveyor
