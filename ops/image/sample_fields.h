// The SampleOps' side of a sample's other fields (conveyor/fields.h): the decoding ops decode the mask
// with the image, and every geometric op moves the mask and the boxes through the window it applies to
// the image (conveyor/ops/field_geometry.h). A sample without these fields passes through with a few
// checks of empty vectors.
#pragma once

#include <cstddef>

#include "conveyor/ops/pad.h"
#include "conveyor/ops/rect.h"
#include "conveyor/sample.h"

namespace conveyor::ops::detail {

// The sample's encoded mask, opened (header read) in this thread's PNG decoder, for the decoding ops:
// they reserve its memory together with the image's (one reservation, so that two decodes never wait on
// each other), then decode it.
class EncodedMask {
 public:
  // Opens sample.encoded_mask, when there is one, under the image's pixel limit.
  EncodedMask(const Sample& sample, std::size_t max_pixels);
  bool present() const noexcept { return present_; }
  // What decoding it allocates at most (0 without a mask).
  std::size_t memory_estimate() const;
  // Checks that the mask is height x width (the image as stored) and that the image was not turned by its
  // EXIF orientation (masks and boxes are in the stored image's pixels).
  void check_image(const Sample& sample, int height, int width, int orientation) const;
  // The whole mask as the sample's current mask.
  void decode_whole(Sample& sample) const;
  // `window` of it (inside the mask), resized by nearest neighbour to out_height x out_width, as the
  // sample's current mask.
  void decode_window(Sample& sample, Rect window, int out_height, int out_width) const;

 private:
  bool present_ = false;
};

// After a geometric op took `window` of the image of shape `image` (the current one before the op, in its
// coordinates) to an out_height x out_width image: the sample's current mask follows (made up pixels:
// FieldOptions::mask_fill under constant padding, else `mode`), and so do its boxes. Throws InvalidArgument
// when the sample has an encoded mask that no op decoded, or a mask of another size than the image.
void window_fields(Sample& sample, ImageShape image, Rect window, int out_height, int out_width,
                   PadMode mode = PadMode::constant);

// After the image was mirrored left-right (horizontal) or top-bottom, in place: the mask and boxes too.
void flip_fields(Sample& sample, bool horizontal);

}  // namespace conveyor::ops::detail
