// Mirroring images left-right or top-bottom.
#pragma once

#include "conveyor/image.h"

namespace conveyor::ops {

// In place.
void flip_horizontal(ImageView image);
void flip_vertical(ImageView image);

// Into `out` (same shape, not overlapping `image`): the flip costs nothing beyond the copy.
void flip_horizontal(ConstImageView image, ImageView out);
void flip_vertical(ConstImageView image, ImageView out);

}  // namespace conveyor::ops
