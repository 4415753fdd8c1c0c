// Centre crops, and the evaluation transform (resize the shorter side, crop the centre) fused with decoding.
#pragma once

#include <span>

#include "conveyor/image.h"
#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/ops/rect.h"
#include "conveyor/ops/resize.h"

namespace conveyor::ops {

// The height x width window at the centre of an image_height x image_width image, rounded as torchvision's
// CenterCrop; it reaches outside the image when the crop is larger.
Rect center_crop_window(int image_height, int image_width, int height, int width);

// A view of the centre window (which must fit inside the image).
ConstImageView center_crop(ConstImageView image, int height, int width);

// The largest window with the aspect ratio of height x width, centred: what "resize the shorter side, then
// crop the centre" keeps of the image.
Rect center_fit_window(int image_height, int image_width, int height, int width);

// Decodes only center_fit_window(...) of the JPEG, at the best DCT scale, and resizes it into `out`: the
// evaluation transform (shorter side to out's size, centre crop) without decoding what is cut away.
DecodeResult decode_center_crop(JpegDecoder& decoder, std::span<const std::uint8_t> jpeg, ImageView out,
                                const DecodeOptions& options = {},
                                Interpolation interpolation = Interpolation::linear);

}  // namespace conveyor::ops
