// Crops: windows of an image, as views (no copy) or copied, and the random crop of the classic
// CIFAR / Fashion-MNIST recipe (pad, then crop at a random place).
#pragma once

#include <cstdint>

#include "conveyor/image.h"
#include "conveyor/ops/pad.h"
#include "conveyor/ops/rect.h"
#include "conveyor/random.h"

namespace conveyor::ops {

// A view of `window`, which must lie inside the image.
ConstImageView crop(ConstImageView image, Rect window);
ImageView crop(ImageView image, Rect window);

// Copies `window` into `out` (window.height x window.width). The window may reach outside the image: the
// missing pixels are made up by `mode` (so a crop of a window larger than the image pads it).
void crop_copy(ConstImageView image, Rect window, ImageView out, PadMode mode = PadMode::constant,
               std::uint8_t value = 0);

// Where torchvision's RandomCrop(size=(height, width), padding) cuts a height x width window out of an
// image padded by `padding` on every side: uniform over all positions. Coordinates are those of the
// unpadded image, so the window may start at -padding.
Rect random_crop_window(int image_height, int image_width, int height, int width, int padding, Rng& rng);

// random_crop_window, then crop_copy into `out` (whose shape gives the size): padding and crop in one
// copy, without the padded image ever existing.
void random_crop(ConstImageView image, ImageView out, Rng& rng, int padding = 0,
                 PadMode mode = PadMode::constant, std::uint8_t value = 0);

}  // namespace conveyor::ops
