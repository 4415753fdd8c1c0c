#include "conveyor/ops/apply_geometry.h"

#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/flip.h"

namespace conveyor::ops {
namespace {

// The image's rule: a window of the output's size is copied (made-up pixels by the pad mode), a larger or
// smaller one resized (it lies inside the image); a mirror flips in place.
void move_image(Sample& sample, ConstImageView image, const GeometryChange& change,
                const ImageResampling& how) {
  if (change.kind == GeometryChange::Kind::mirror) {
    const ImageView pixels = sample.mutable_image();
    change.horizontal ? flip_horizontal(pixels) : flip_vertical(pixels);
    return;
  }
  const ImageView out = sample.output({change.out_height, change.out_width, image.channels});
  if (change.resizes()) {
    resize(crop(image, change.window), out, how.interpolation);
  } else {
    crop_copy(image, change.window, out, change.pad, how.fill);
  }
  sample.publish();
}

}  // namespace

void apply_geometry(Sample& sample, const GeometryChange& change, const ImageResampling& image) {
  const ConstImageView pixels = sample.image();
  if (pixels.empty()) throw InvalidArgument("apply_geometry: the sample has no image yet (decode it first)");
  if (change.image_height != pixels.height || change.image_width != pixels.width)
    throw InvalidArgument("apply_geometry: the change was drawn for a " + std::to_string(change.image_width) +
                          "x" + std::to_string(change.image_height) + " image, the sample's is " +
                          std::to_string(pixels.width) + "x" + std::to_string(pixels.height));
  change.check();
  move_image(sample, pixels, change, image);
  move_fields(sample, change);
}

void move_fields(Sample& sample, const GeometryChange& change) {
  FieldList& fields = sample.fields();
  std::vector<std::uint8_t>& dropped = fields.dropped_scratch();
  dropped.clear();
  FieldMove context{sample.field_options(), dropped};
  for (std::size_t i = 0; i < fields.size(); ++i) {
    Field& field = fields[i];
    if (!field.empty() && field.follows_geometry()) field.move(change, context);
  }
  if (dropped.empty()) return;
  // An instance one field dropped (a box that left the picture) goes from every field that has instances.
  for (std::uint8_t& mark : dropped) mark = mark != 0 ? 0 : 1;
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i].instances() > 0) fields[i].keep_instances(dropped);
}

}  // namespace conveyor::ops
