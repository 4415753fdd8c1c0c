// Mirroring images left-right or top-bottom.
#pragma once

#include <cstdint>

#include "conveyor/image.h"

namespace conveyor::ops {

// Whether the random flip of the sample with `seed` mirrors it: true with probability p, drawn from
// Rng(seed, stream). The flip SampleOps and the GPU augmentation both call this.
bool draw_flip(double p, std::uint64_t seed, std::uint64_t stream);

// In place.
void flip_horizontal(ImageView image);
void flip_vertical(ImageView image);

// Into `out` (same shape, not overlapping `image`): the flip costs nothing beyond the copy.
void flip_horizontal(ConstImageView image, ImageView out);
void flip_vertical(ConstImageView image, ImageView out);

}  // namespace conveyor::ops
