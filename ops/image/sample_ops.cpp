// The SampleOps that work on decoded pixels (conveyor/ops/sample_ops.h); the decoding ones are in
// decode_ops.cpp. Geometric ops move the sample's mask and boxes with the image (sample_fields.h); colour
// ops touch the image only.
#include "conveyor/ops/sample_ops.h"

#include <string>

#include "conveyor/error.h"
#include "conveyor/ops/center_crop.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/flip.h"
#include "ops/image/sample_fields.h"

namespace conveyor::ops {
namespace {

void check_size(int height, int width, const char* op) {
  if (height <= 0 || width <= 0) throw InvalidArgument(std::string(op) + ": size must be positive");
}

ConstImageView current_image(const Sample& sample, const char* op) {
  const ConstImageView image = sample.image();
  if (image.empty())
    throw InvalidArgument(std::string(op) + ": the sample has no image yet (decode it first)");
  return image;
}

ImageView current_mutable_image(Sample& sample, const char* op) {
  current_image(sample, op);
  return sample.mutable_image();
}

// The ops that take a window of the image (reaching outside it: made up by `mode`) to a height x width
// output: the image by crop_copy, its mask and boxes by the same window.
void apply_window(Sample& sample, ConstImageView image, Rect window, PadMode mode, std::uint8_t value) {
  crop_copy(image, window, sample.output({window.height, window.width, image.channels}), mode, value);
  sample.publish();
  detail::window_fields(sample, image.shape(), window, window.height, window.width, mode);
}

}  // namespace

SampleOp random_crop(int height, int width, int padding, PadMode mode) {
  check_size(height, width, "random_crop");
  if (padding < 0) throw InvalidArgument("random_crop: negative padding");
  return {"random_crop", [height, width, padding, mode](Sample& sample) {
            const ConstImageView image = current_image(sample, "random_crop");
            Rng rng = sample.rng(stream::random_crop);
            const Rect window = random_crop_window(image.height, image.width, height, width, padding, rng);
            apply_window(sample, image, window, mode, 0);
          }};
}

SampleOp pad(int top, int bottom, int left, int right, PadMode mode, std::uint8_t value) {
  if (top < 0 || bottom < 0 || left < 0 || right < 0) throw InvalidArgument("pad: negative margin");
  return {"pad", [=](Sample& sample) {
            const ConstImageView image = current_image(sample, "pad");
            apply_window(sample, image,
                         {-left, -top, image.width + left + right, image.height + top + bottom}, mode, value);
          }};
}

SampleOp crop(Rect window) {
  if (window.empty()) throw InvalidArgument("crop: empty window");
  return {"crop", [window](Sample& sample) {
            apply_window(sample, current_image(sample, "crop"), window, PadMode::constant, 0);
          }};
}

SampleOp center_crop(int height, int width) {
  check_size(height, width, "center_crop");
  return {"center_crop", [height, width](Sample& sample) {
            const ConstImageView image = current_image(sample, "center_crop");
            apply_window(sample, image, center_crop_window(image.height, image.width, height, width),
                         PadMode::constant, 0);
          }};
}

SampleOp random_resized_crop(int size, RandomResizedCropOptions options) {
  check_size(size, size, "random_resized_crop");
  Rng check(0);
  random_resized_crop_window(1, 1, options, check);  // validates the options now rather than per sample
  return {"random_resized_crop", [size, options](Sample& sample) {
            const ConstImageView image = current_image(sample, "random_resized_crop");
            const Rect window =
                draw_random_resized_crop_window(image.height, image.width, options, sample.seed,
                                                op_stream(stream::random_resized_crop, sample.op_position));
            resize(crop(image, window), sample.output({size, size, image.channels}), options.interpolation);
            sample.publish();
            detail::window_fields(sample, image.shape(), window, size, size);
          }};
}

SampleOp flip_horizontal(double p) {
  return {"flip_horizontal",
          [p](Sample& sample) {
            ImageView image = current_mutable_image(sample, "flip_horizontal");
            if (draw_flip(p, sample.seed, op_stream(stream::flip_horizontal, sample.op_position))) {
              flip_horizontal(image);
              detail::flip_fields(sample, true);
            }
          },
          FlipHorizontalSpec{p, stream::flip_horizontal}};
}

SampleOp flip_vertical(double p) {
  return {"flip_vertical", [p](Sample& sample) {
            ImageView image = current_mutable_image(sample, "flip_vertical");
            if (draw_flip(p, sample.seed, op_stream(stream::flip_vertical, sample.op_position))) {
              flip_vertical(image);
              detail::flip_fields(sample, false);
            }
          }};
}

SampleOp distort(DistortOptions options) {
  Rng check(0);
  draw_color_jitter(options, check);  // validates the options now rather than per sample
  return {"distort",
          [options](Sample& sample) {
            ImageView image = current_mutable_image(sample, "distort");
            Rng rng = sample.rng(stream::distort);
            distort(image, options, rng);
          },
          DistortSpec{options, stream::distort}};
}

SampleOp resize(int height, int width, Interpolation interpolation) {
  check_size(height, width, "resize");
  return {"resize", [height, width, interpolation](Sample& sample) {
            const ConstImageView image = current_image(sample, "resize");
            resize(image, sample.output({height, width, image.channels}), interpolation);
            sample.publish();
            detail::window_fields(sample, image.shape(), {0, 0, image.width, image.height}, height, width);
          }};
}

}  // namespace conveyor::ops
