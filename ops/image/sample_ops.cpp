// The SampleOps that work on decoded pixels (conveyor/ops/sample_ops.h); the decoding ones are in
// decode_ops.cpp. Each geometric op draws its change and hands it to ops::apply_geometry, which moves the
// image and every field; colour ops touch the image only.
#include "conveyor/ops/sample_ops.h"

#include <string>

#include "conveyor/error.h"
#include "conveyor/ops/apply_geometry.h"
#include "conveyor/ops/center_crop.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/flip.h"

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

// The ops that take a window of the image as it is (reaching outside it: made up by `mode`).
void apply_window(Sample& sample, ConstImageView image, Rect window, PadMode mode, std::uint8_t value) {
  apply_geometry(sample, GeometryChange::crop(image.height, image.width, window, mode), {.fill = value});
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
            apply_geometry(sample, GeometryChange::crop_resize(image.height, image.width, window, size, size),
                           {.interpolation = options.interpolation});
          }};
}

SampleOp flip_horizontal(double p) {
  return {"flip_horizontal",
          [p](Sample& sample) {
            const ConstImageView image = current_image(sample, "flip_horizontal");
            if (draw_flip(p, sample.seed, op_stream(stream::flip_horizontal, sample.op_position)))
              apply_geometry(sample, GeometryChange::mirror(image.height, image.width, true));
          },
          FlipHorizontalSpec{p, stream::flip_horizontal}, "flip_horizontal"};
}

SampleOp flip_vertical(double p) {
  return {"flip_vertical", [p](Sample& sample) {
            const ConstImageView image = current_image(sample, "flip_vertical");
            if (draw_flip(p, sample.seed, op_stream(stream::flip_vertical, sample.op_position)))
              apply_geometry(sample, GeometryChange::mirror(image.height, image.width, false));
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
          DistortSpec{options, stream::distort}, "distort"};
}

SampleOp resize(int height, int width, Interpolation interpolation) {
  check_size(height, width, "resize");
  return {"resize", [height, width, interpolation](Sample& sample) {
            const ConstImageView image = current_image(sample, "resize");
            apply_geometry(sample, GeometryChange::resize(image.height, image.width, height, width),
                           {.interpolation = interpolation});
          }};
}

}  // namespace conveyor::ops
