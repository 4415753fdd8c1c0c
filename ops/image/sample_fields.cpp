#include "ops/image/sample_fields.h"

#include <string>

#include "conveyor/error.h"
#include "conveyor/ops/decode_png.h"
#include "conveyor/ops/field_geometry.h"

namespace conveyor::ops::detail {
namespace {

// One decoder and one whole-mask buffer per thread, as for JPEGs (sample_ops.cpp): buffers kept from one
// sample to the next, no state.
PngDecoder& thread_mask_decoder() {
  thread_local PngDecoder decoder;
  return decoder;
}

Mask& thread_whole_mask() {
  thread_local Mask mask;
  return mask;
}

std::string size_text(int height, int width) { return std::to_string(width) + "x" + std::to_string(height); }

// The sample's current mask, checked against the height x width image it belongs to; empty when it has none.
ConstMaskView current_mask(const Sample& sample, int height, int width) {
  const ConstMaskView mask = sample.mask();
  if (mask.empty()) {
    if (!sample.encoded_mask.empty())
      throw InvalidArgument(
          "the sample's mask was not decoded: decode it with the image (ops::decode, "
          "decode_random_resized_crop or decode_center_crop decode both)");
    return mask;
  }
  if (height != mask.height || width != mask.width)
    throw InvalidArgument("the mask is " + size_text(mask.height, mask.width) + " but the image " +
                          size_text(height, width));
  return mask;
}

}  // namespace

EncodedMask::EncodedMask(const Sample& sample, std::size_t max_pixels) {
  if (sample.encoded_mask.empty()) return;
  thread_mask_decoder().open(sample.encoded_mask, max_pixels);
  present_ = true;
}

std::size_t EncodedMask::memory_estimate() const {
  return present_ ? thread_mask_decoder().memory_estimate() : 0;
}

void EncodedMask::check_image(const Sample& sample, int height, int width, int orientation) const {
  if ((present_ || !sample.boxes.empty()) && orientation != 1)
    throw InvalidArgument(
        "the image has EXIF orientation " + std::to_string(orientation) +
        " and apply_exif_orientation is on: its mask and boxes are in the stored image's pixels, so turn "
        "apply_exif_orientation off for samples with masks or boxes");
  if (!present_) return;
  const MaskShape mask = thread_mask_decoder().mask_shape();
  if (mask.height != height || mask.width != width)
    throw InvalidArgument("the mask is " + size_text(mask.height, mask.width) + " but the image " +
                          size_text(height, width));
}

void EncodedMask::decode_whole(Sample& sample) const {
  if (!present_) return;
  PngDecoder& decoder = thread_mask_decoder();
  decoder.read_mask(sample.mask_output(decoder.mask_shape()));
  sample.publish_mask();
}

void EncodedMask::decode_window(Sample& sample, Rect window, int out_height, int out_width) const {
  if (!present_) return;
  PngDecoder& decoder = thread_mask_decoder();
  const MaskShape shape = decoder.mask_shape();
  Mask& whole = thread_whole_mask();
  whole.reshape(shape);
  decoder.read_mask(whole.view());
  crop_resize_mask(whole.view(), window, sample.mask_output({out_height, out_width, shape.type}));
  sample.publish_mask();
}

void window_fields(Sample& sample, ImageShape image, Rect window, int out_height, int out_width,
                   PadMode mode) {
  const ConstMaskView mask = current_mask(sample, image.height, image.width);
  if (!mask.empty()) {
    const MaskView out = sample.mask_output({out_height, out_width, mask.type});
    crop_resize_mask(mask, window, out, mode, sample.field_options().mask_fill);
    sample.publish_mask();
  }
  crop_resize_boxes(sample.boxes, window, out_width, out_height, sample.field_options());
}

void flip_fields(Sample& sample, bool horizontal) {
  const ConstImageView image = sample.image();
  if (!current_mask(sample, image.height, image.width).empty()) {
    const MaskView mask = sample.mutable_mask();
    horizontal ? flip_mask_horizontal(mask) : flip_mask_vertical(mask);
  }
  if (sample.boxes.empty()) return;
  horizontal ? flip_boxes_horizontal(sample.boxes, image.width)
             : flip_boxes_vertical(sample.boxes, image.height);
}

}  // namespace conveyor::ops::detail
