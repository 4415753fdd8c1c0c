// The one geometry call: a geometric op draws its change once (conveyor/fields/geometry_change.h), then hands
// it here, and the image and every field of the sample follow it, each by its own type's rule (the image
// interpolated, a mask by nearest neighbour, boxes mapped and clipped, keypoints mapped, a kind of your own
// by its move()). Every geometric op of the library is written this way, and so is a user's:
//
//   SampleOp zoom{"zoom", [](Sample& sample) {
//     const ConstImageView image = sample.image();
//     Rng rng = sample.rng(kZoomStream);
//     const ops::Rect window = ...;  // drawn once from rng
//     ops::apply_geometry(sample, ops::GeometryChange::crop_resize(image.height, image.width, window,
//                                                                  image.height, image.width));
//   }};
#pragma once

#include <cstdint>

#include "conveyor/fields/geometry_change.h"
#include "conveyor/ops/resize.h"
#include "conveyor/sample.h"

namespace conveyor::ops {

// How a window change resamples the image itself (the fields have their own rules).
struct ImageResampling {
  Interpolation interpolation = Interpolation::linear;
  std::uint8_t fill = 0;  // the value of pixels made up outside the image under PadMode::constant
};

// Moves the sample's image (written through sample.output(), so that the chain's last op writes straight
// into the batch slot; a mirror in place) and every field. Throws InvalidArgument, before anything moves,
// when the sample has no image, when the change was drawn for an image of another size, or when the change
// is not one (an empty window, a resized window reaching outside the image); and as a field's own move
// does (a mask still encoded: decode it with the image).
void apply_geometry(Sample& sample, const GeometryChange& change, const ImageResampling& image = {});

// Every field but the image: for ops that make the image themselves (the decoding ops decode only the
// window of the image as stored, or leave it to a GPU).
void move_fields(Sample& sample, const GeometryChange& change);

}  // namespace conveyor::ops
