// A sample's fields besides its image and label: a segmentation mask, boxes with classes, multi-label tags,
// keypoints, or kinds of your own; each is a type (conveyor/fields/field.h). Which ones a source gives
// (FieldSet), and the rules the geometric ops follow for them (FieldOptions).
//
// How fields move (torchvision v2's shape): a geometric op (random resized crop, crops, pad, resize, flips)
// draws its random parameters once from the sample's seed, then applies the change to every field by type
// (ops::apply_geometry): the image as before (interpolated), the mask by nearest neighbour (class ids are
// never blended; pixels made up outside the image get FieldOptions::mask_fill under constant padding), the
// boxes by mapping their corners, clipping them to the output and dropping those left too small (with their
// classes, and their instances in other fields). Colour ops touch the image only. A sample without these
// fields costs nothing more than before.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace conveyor {

class Field;  // conveyor/fields/field.h

// The fields a source gives (besides the image and the label every source gives).
struct FieldSet {
  bool mask = false;   // Sample::encoded_mask: a PNG of class ids per pixel
  bool boxes = false;  // Sample::boxes: boxes with classes (and crowd flags)
  bool tags = false;   // Sample::tags: class ids of a multi-label sample
  // Any other kind, as an empty field of it: what batches make room by before a sample is seen (keypoints:
  // their points per instance). COCO with keypoints declares a KeypointsField here.
  std::vector<std::shared_ptr<const Field>> others = {};

  // The kinds' names: "mask", "boxes", "tags" (those set), then the others'.
  std::vector<std::string> names() const;
  bool has(std::string_view name) const;
  bool empty() const noexcept { return !mask && !boxes && !tags && others.empty(); }
  // Whether any of them moves with the image (then a flip must stay in the pipeline, which moves them all).
  bool follows_geometry() const noexcept;
  // The same kinds.
  friend bool operator==(const FieldSet& a, const FieldSet& b) { return a.names() == b.names(); }
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
