// RandomResizedCrop (Inception-style scale and aspect augmentation), on decoded pixels or fused with JPEG
// decoding so that only the window is decoded, at the DCT scale the window size allows.
#pragma once

#include <cstdint>
#include <span>

#include "conveyor/image.h"
#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/ops/rect.h"
#include "conveyor/ops/resize.h"
#include "conveyor/random.h"

namespace conveyor::ops {

struct RandomResizedCropOptions {
  // The window covers a fraction of the image area drawn uniformly from [scale_min, scale_max] ...
  double scale_min = 0.08;
  double scale_max = 1.0;
  // ... with a width/height ratio drawn log-uniformly from [ratio_min, ratio_max].
  double ratio_min = 3.0 / 4;
  double ratio_max = 4.0 / 3;
  Interpolation interpolation = Interpolation::linear;
  DecodeOptions decode;  // used by the fused form
};

// torchvision's RandomResizedCrop.get_params: up to 10 draws of (area, ratio); the first window that fits
// is placed uniformly; after 10 misses, the whole image centre-cropped to the nearest allowed ratio.
Rect random_resized_crop_window(int height, int width, const RandomResizedCropOptions& options, Rng& rng);

// The window of the sample with `seed` in an image that decodes to height x width: the one above, drawn
// from Rng(seed, stream). The decode_random_resized_crop SampleOp and the GPU decode path both call this,
// so a sample gets the same window whichever decoder takes it.
Rect draw_random_resized_crop_window(int height, int width, const RandomResizedCropOptions& options,
                                     std::uint64_t seed, std::uint64_t stream);

// A random window of decoded pixels resized into `out`.
void random_resized_crop(ConstImageView image, ImageView out, const RandomResizedCropOptions& options,
                         Rng& rng);

// Decodes only a random window of a JPEG and resizes it into `out`, whose channels must match the decoded
// image's (decoder.shape().channels after open: 3, or 1 for gray files with ColorMode::keep or gray). The
// window is drawn in full-resolution coordinates; it is decoded at the largest DCT scale (1/2, 1/4, 1/8)
// at which it still covers `out`, which moves its edges by less than one decoded pixel.
DecodeResult decode_random_resized_crop(JpegDecoder& decoder, std::span<const std::uint8_t> jpeg,
                                        ImageView out, const RandomResizedCropOptions& options, Rng& rng);

// Decodes `window` (full-resolution, upright coordinates) at the best DCT scale and resizes it into
// `out`: the building block of the fused crops.
DecodeResult decode_resized_window(JpegDecoder& decoder, Rect window, ImageView out,
                                   Interpolation interpolation);

}  // namespace conveyor::ops
