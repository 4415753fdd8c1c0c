#include "conveyor/ops/sample_ops.h"

#include <chrono>
#include <string>

#include "conveyor/defer.h"
#include "conveyor/error.h"
#include "conveyor/ops/center_crop.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/deferred_crop.h"
#include "conveyor/ops/flip.h"
#include "conveyor/ops/raw_image.h"
#include "conveyor/ops/resize.h"

namespace conveyor::ops {
namespace {

// One decoder per thread: SampleOps are shared by all the pipeline's workers, and a decoder's buffers
// are worth keeping from one sample to the next. It carries nothing from one sample to the next but
// buffer capacity, so results do not depend on which thread decoded what.
JpegDecoder& thread_decoder() {
  thread_local JpegDecoder decoder;
  return decoder;
}

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

// `window` of a decoded image (a raw sample's pixels) resized into the sample's output: what the fused JPEG
// crops do, without the decoding (a prepared data set stores images decoded: ops/raw_image.h).
void resize_raw_window(Sample& sample, ConstImageView image, const Rect& window, int height, int width,
                       Interpolation interpolation) {
  const ConstImageView part(image.at(window.y, window.x),
                            ImageShape{window.height, window.width, image.channels}, image.stride);
  resize(part, sample.output({height, width, image.channels}), interpolation);
  sample.publish();
}

}  // namespace

SampleOp decode(DecodeOptions options) {
  return {"decode", [options](Sample& sample) {
            if (is_raw_image(sample.encoded)) {
              const ConstImageView image = read_raw_image(sample.encoded, options);
              resize_raw_window(sample, image, {0, 0, image.width, image.height}, image.height, image.width,
                                Interpolation::nearest);
              return;
            }
            JpegDecoder& decoder = thread_decoder();
            decoder.open(sample.encoded, options);
            const ImageShape full = decoder.shape();
            const auto memory =
                sample.reserve_decode_memory(decoder.memory_estimate({0, 0, full.width, full.height}));
            decoder.read(sample.output(full));
            sample.publish();
          }};
}

SampleOp decode_random_resized_crop(int size, RandomResizedCropOptions options) {
  check_size(size, size, "decode_random_resized_crop");
  Rng check(0);
  random_resized_crop_window(1, 1, options, check);  // validates the options now rather than per sample
  return {"decode_random_resized_crop",
          [size, options](Sample& sample) {
            DeferPolicy* const policy = sample.defer_policy();
            const auto start =
                policy ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
            if (is_raw_image(sample.encoded)) {
              // Stored decoded: nothing for a GPU decoder to do, the window is only resized here.
              const ConstImageView image = read_raw_image(sample.encoded, options.decode);
              if (policy && policy->should_defer(sample)) policy->declined(sample, "raw_image");
              const Rect window =
                  draw_random_resized_crop_window(image.height, image.width, options, sample.seed,
                                                  op_stream(stream::random_resized_crop, sample.op_position));
              resize_raw_window(sample, image, window, size, size, options.interpolation);
              if (policy) policy->spent(false, std::chrono::steady_clock::now() - start);
              return;
            }
            JpegDecoder& decoder = thread_decoder();
            const JpegHeader& header = decoder.open(sample.encoded, options.decode);
            const ImageShape full = decoder.shape();
            const Rect window =
                draw_random_resized_crop_window(full.height, full.width, options, sample.seed,
                                                op_stream(stream::random_resized_crop, sample.op_position));
            const ImageShape output{size, size, full.channels};
            if (policy && policy->should_defer(sample)) {
              const char* refusal = deferral_refusal(header, options.decode, full.channels,
                                                     options.interpolation, sample.slot().shape());
              if (refusal == nullptr) {
                DeferredCrop crop;
                crop.window = window;
                crop.image_width = full.width;
                crop.image_height = full.height;
                crop.output = output;
                crop.interpolation = options.interpolation;
                crop.decode = options.decode;
                sample.defer(as_bytes(crop));
                policy->spent(true, std::chrono::steady_clock::now() - start);
                return;
              }
              policy->declined(sample, refusal);
            }
            const auto memory = sample.reserve_decode_memory(
                decoder.memory_estimate(window, choose_dct_scale(window.width, window.height, size, size)));
            decode_resized_window(decoder, window, sample.output(output), options.interpolation);
            sample.publish();
            if (policy) policy->spent(false, std::chrono::steady_clock::now() - start);
          },
          DecodeRandomResizedCropSpec{size, options}};
}

SampleOp decode_center_crop(int size, DecodeOptions options) {
  check_size(size, size, "decode_center_crop");
  return {"decode_center_crop", [size, options](Sample& sample) {
            if (is_raw_image(sample.encoded)) {
              const ConstImageView image = read_raw_image(sample.encoded, options);
              resize_raw_window(sample, image, center_fit_window(image.height, image.width, size, size), size,
                                size, Interpolation::linear);
              return;
            }
            JpegDecoder& decoder = thread_decoder();
            decoder.open(sample.encoded, options);
            const ImageShape full = decoder.shape();
            const Rect window = center_fit_window(full.height, full.width, size, size);
            const auto memory = sample.reserve_decode_memory(
                decoder.memory_estimate(window, choose_dct_scale(window.width, window.height, size, size)));
            decode_resized_window(decoder, window, sample.output({size, size, full.channels}),
                                  Interpolation::linear);
            sample.publish();
          }};
}

SampleOp random_crop(int height, int width, int padding, PadMode mode) {
  check_size(height, width, "random_crop");
  if (padding < 0) throw InvalidArgument("random_crop: negative padding");
  return {"random_crop", [height, width, padding, mode](Sample& sample) {
            const ConstImageView image = current_image(sample, "random_crop");
            Rng rng = sample.rng(stream::random_crop);
            ImageView out = sample.output({height, width, image.channels});
            random_crop(image, out, rng, padding, mode);
            sample.publish();
          }};
}

SampleOp pad(int top, int bottom, int left, int right, PadMode mode, std::uint8_t value) {
  if (top < 0 || bottom < 0 || left < 0 || right < 0) throw InvalidArgument("pad: negative margin");
  return {"pad", [=](Sample& sample) {
            const ConstImageView image = current_image(sample, "pad");
            ImageView out =
                sample.output({image.height + top + bottom, image.width + left + right, image.channels});
            pad(image, out, top, bottom, left, right, mode, value);
            sample.publish();
          }};
}

SampleOp flip_horizontal(double p) {
  return {"flip_horizontal",
          [p](Sample& sample) {
            ImageView image = current_mutable_image(sample, "flip_horizontal");
            if (draw_flip(p, sample.seed, op_stream(stream::flip_horizontal, sample.op_position)))
              flip_horizontal(image);
          },
          FlipHorizontalSpec{p, stream::flip_horizontal}};
}

SampleOp flip_vertical(double p) {
  return {"flip_vertical", [p](Sample& sample) {
            ImageView image = current_mutable_image(sample, "flip_vertical");
            if (draw_flip(p, sample.seed, op_stream(stream::flip_vertical, sample.op_position)))
              flip_vertical(image);
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
          }};
}

}  // namespace conveyor::ops
