// The decoding SampleOps (conveyor/ops/sample_ops.h): sample.encoded, a JPEG, a PNG or an image stored
// decoded (a binary PPM/PGM of a prepared data set, conveyor/ops/raw_image.h), into pixels; the sample's
// fields follow the window (ops::move_fields), and a field kept encoded (a mask's PNG) is opened with the
// image, its memory reserved with the image's, and decoded through the same window.
#include <chrono>
#include <string>
#include <utility>

#include "conveyor/defer.h"
#include "conveyor/error.h"
#include "conveyor/ops/apply_geometry.h"
#include "conveyor/ops/center_crop.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/decode_png.h"
#include "conveyor/ops/deferred_crop.h"
#include "conveyor/ops/raw_image.h"
#include "conveyor/ops/resize.h"
#include "conveyor/ops/sample_ops.h"

namespace conveyor::ops {
namespace {

// One decoder of each kind per thread: SampleOps are shared by all the pipeline's workers, and a decoder's
// buffers are worth keeping from one sample to the next. They carry nothing from one sample to the next but
// buffer capacity, so results do not depend on which thread decoded what.
JpegDecoder& thread_decoder() {
  thread_local JpegDecoder decoder;
  return decoder;
}

PngDecoder& thread_png_decoder() {
  thread_local PngDecoder decoder;
  return decoder;
}

// A whole PNG image, before the crop ops cut their window out of it (PNG has no region decode).
Image& thread_png_image() {
  thread_local Image image;
  return image;
}

void check_decode_size(int height, int width, const char* op) {
  if (height <= 0 || width <= 0) throw InvalidArgument(std::string(op) + ": size must be positive");
}

// The sample's image, opened (header read) by the decoder its first bytes call for; anything that is neither
// a PNG nor stored decoded goes to the JPEG decoder, which names what is wrong with it.
struct OpenedImage {
  bool png = false;
  ImageShape full;      // as delivered: upright, in the colour mode asked for
  int orientation = 1;  // the EXIF orientation the JPEG decode applies
  const JpegHeader* jpeg = nullptr;
  ConstImageView raw{};  // stored decoded: the pixels, in place in sample.encoded (empty otherwise)

  bool stored_decoded() const noexcept { return !raw.empty(); }
  std::size_t memory_estimate(Rect window, int scale_denom) const {
    if (stored_decoded()) return 0;  // nothing is decoded: the pixels are the bytes already read
    return png ? thread_png_decoder().memory_estimate()
               : thread_decoder().memory_estimate(window, scale_denom);
  }
};

OpenedImage open_image(const Sample& sample, const DecodeOptions& options) {
  if (is_raw_image(sample.encoded)) {
    const ConstImageView pixels = read_raw_image(sample.encoded, options);
    return {false, pixels.shape(), 1, nullptr, pixels};
  }
  if (detect_image_format(sample.encoded) == ImageFormat::png) {
    PngDecoder& decoder = thread_png_decoder();
    decoder.open(sample.encoded, options.max_pixels);
    return {true, decoder.image_shape(options.color), 1, nullptr};
  }
  JpegDecoder& decoder = thread_decoder();
  const JpegHeader& header = decoder.open(sample.encoded, options);
  return {false, decoder.shape(), decoder.orientation(), &header};
}

// The fields' part of a decode: every field that moves with the image is checked against it and, when kept
// encoded, opened (a mask's PNG header); returns what decoding them allocates, to reserve with the image's
// memory in one reservation (two reservations could wait on each other).
std::size_t open_fields(Sample& sample, const OpenedImage& image, std::size_t max_pixels) {
  std::size_t bytes = 0;
  FieldList& fields = sample.fields();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    Field& field = fields[i];
    if (field.empty() || !field.follows_geometry()) continue;
    if (image.orientation != 1)
      throw InvalidArgument("the image has EXIF orientation " + std::to_string(image.orientation) +
                            " and apply_exif_orientation is on: its " + std::string(field.name()) +
                            " field is in the stored image's pixels, so turn apply_exif_orientation off for "
                            "samples with fields that move with the image");
    bytes += field.open_with_image(image.full.height, image.full.width, max_pixels);
  }
  return bytes;
}

// `window` of the opened image resized into `out`: the JPEG decodes only the window (at the DCT scale it
// allows), the PNG decodes whole first.
void decode_window(const OpenedImage& image, const DecodeOptions& options, Rect window, ImageView out,
                   Interpolation interpolation) {
  if (image.stored_decoded()) {
    resize(crop(image.raw, window), out, interpolation);
    return;
  }
  if (!image.png) {
    decode_resized_window(thread_decoder(), window, out, interpolation);
    return;
  }
  Image& whole = thread_png_image();
  whole.reshape(image.full);
  thread_png_decoder().read_image(whole.view(), options.color);
  resize(crop(std::as_const(whole).view(), window), out, interpolation);
}

}  // namespace

SampleOp decode(DecodeOptions options) {
  return {
      "decode", [options](Sample& sample) {
        const OpenedImage image = open_image(sample, options);
        const std::size_t field_bytes = open_fields(sample, image, options.max_pixels);
        const auto memory = sample.reserve_decode_memory(
            image.memory_estimate({0, 0, image.full.width, image.full.height}, 1) + field_bytes);
        if (image.stored_decoded()) {
          crop_copy(image.raw, Rect{0, 0, image.full.width, image.full.height}, sample.output(image.full));
        } else if (image.png) {
          thread_png_decoder().read_image(sample.output(image.full), options.color);
        } else {
          thread_decoder().read(sample.output(image.full));
        }
        sample.publish();
        move_fields(sample, GeometryChange::crop(image.full.height, image.full.width,
                                                 {0, 0, image.full.width, image.full.height}));
      }};
}

SampleOp decode_random_resized_crop(int size, RandomResizedCropOptions options) {
  check_decode_size(size, size, "decode_random_resized_crop");
  Rng check(0);
  random_resized_crop_window(1, 1, options, check);  // validates the options now rather than per sample
  return {"decode_random_resized_crop",
          [size, options](Sample& sample) {
            DeferPolicy* const policy = sample.defer_policy();
            const auto start =
                policy ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
            const OpenedImage image = open_image(sample, options.decode);
            const ImageShape full = image.full;
            const Rect window =
                draw_random_resized_crop_window(full.height, full.width, options, sample.seed,
                                                op_stream(stream::random_resized_crop, sample.op_position));
            const std::size_t field_bytes = open_fields(sample, image, options.decode.max_pixels);
            const GeometryChange change =
                GeometryChange::crop_resize(full.height, full.width, window, size, size);
            const ImageShape output{size, size, full.channels};
            if (policy && policy->should_defer(sample)) {
              // A GPU decoder has nothing to do for pixels stored decoded.
              const char* refusal = image.stored_decoded() ? "raw_image"
                                    : image.png
                                        ? "png"
                                        : deferral_refusal(*image.jpeg, options.decode, full.channels,
                                                           options.interpolation, sample.slot().shape());
              if (refusal == nullptr) {
                // The image goes to the stage after batching; the fields are made here (a mask is small, and
                // the batch needs it in its slot either way).
                {
                  const auto memory = sample.reserve_decode_memory(field_bytes);
                  move_fields(sample, change);
                }
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
                image.memory_estimate(window, choose_dct_scale(window.width, window.height, size, size)) +
                field_bytes);
            decode_window(image, options.decode, window, sample.output(output), options.interpolation);
            sample.publish();
            move_fields(sample, change);
            if (policy) policy->spent(false, std::chrono::steady_clock::now() - start);
          },
          DecodeRandomResizedCropSpec{size, options}, "decode_random_resized_crop"};
}

SampleOp decode_center_crop(int size, DecodeOptions options) {
  check_decode_size(size, size, "decode_center_crop");
  return {"decode_center_crop", [size, options](Sample& sample) {
            const OpenedImage image = open_image(sample, options);
            const ImageShape full = image.full;
            const Rect window = center_fit_window(full.height, full.width, size, size);
            const std::size_t field_bytes = open_fields(sample, image, options.max_pixels);
            const auto memory = sample.reserve_decode_memory(
                image.memory_estimate(window, choose_dct_scale(window.width, window.height, size, size)) +
                field_bytes);
            decode_window(image, options, window, sample.output({size, size, full.channels}),
                          Interpolation::linear);
            sample.publish();
            move_fields(sample, GeometryChange::crop_resize(full.height, full.width, window, size, size));
          }};
}

}  // namespace conveyor::ops
