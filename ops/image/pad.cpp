#include "conveyor/ops/pad.h"

#include "conveyor/error.h"
#include "conveyor/ops/crop.h"

namespace conveyor::ops {

// Padding is a crop of a window larger than the image: crop_copy makes up the margins.
void pad(ConstImageView image, ImageView out, int top, int bottom, int left, int right, PadMode mode,
         std::uint8_t value) {
  if (top < 0 || bottom < 0 || left < 0 || right < 0) throw InvalidArgument("pad: negative margin");
  crop_copy(image, {-left, -top, image.width + left + right, image.height + top + bottom}, out, mode, value);
}

void pad_to(ConstImageView image, ImageView out, PadMode mode, std::uint8_t value) {
  if (out.height < image.height || out.width < image.width)
    throw InvalidArgument("pad_to: output is smaller");
  const int top = (out.height - image.height) / 2, left = (out.width - image.width) / 2;
  pad(image, out, top, out.height - image.height - top, left, out.width - image.width - left, mode, value);
}

}  // namespace conveyor::ops
