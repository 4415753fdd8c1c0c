// libFuzzer target: any bytes, as a pipeline would meet them in a file named .jpg, through the public
// image ops: whole decode, the fused random-resized-crop decode (ROI + DCT scaling), the centre-crop
// decode, flips and colour distortion, and a decoder reused from input to input. The options (colour
// mode, fast path, EXIF orientation, strict warnings) and every random draw come from a hash of the input,
// so a crash reproduces from its file alone. A small pixel limit keeps each input fast.
//
// What counts as a failure here: a crash or sanitizer report, an exception other than DecodeError (bad
// data must be reported as such, never as an invalid argument or std::bad_alloc), a result of the wrong
// shape, or a window decode that differs from cropping the whole decode of a file libjpeg decoded without
// a warning (the ROI path promises bit-exactness).
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "conveyor/random.h"
#include "conveyor/sample.h"

namespace {

namespace ops = conveyor::ops;
using conveyor::DecodeError;

constexpr std::size_t kMaxPixels = 512 * 512;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_decode: %s\n", what);
  std::abort();
}

ops::DecodeOptions decode_options(conveyor::Rng& rng) {
  ops::DecodeOptions options;
  options.color = static_cast<ops::ColorMode>(rng.below(3));
  options.apply_exif_orientation = rng.bernoulli(0.3);
  options.warnings_are_errors = rng.bernoulli(0.2);
  options.fast = rng.bernoulli(0.3);
  options.max_pixels = kMaxPixels;
  return options;
}

// Runs `op` and then flips and distorts its result, as a training chain does. A result must be
// `side` x `side` when side > 0, with `channels` channels (1 or 3 when channels is 0).
void run_chain(const conveyor::SampleOp& op, conveyor::Sample& sample, int side, int channels) {
  static const conveyor::SampleOp flip = ops::flip_horizontal(0.5);
  static const conveyor::SampleOp flip_v = ops::flip_vertical(0.5);
  static const conveyor::SampleOp distort =
      ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.2});
  sample.recycle();
  try {
    op.apply(sample);
  } catch (const DecodeError&) {
    return;
  }
  const conveyor::ImageShape shape = sample.image().shape();
  if (side > 0 && (shape.height != side || shape.width != side)) fail("an op delivered the wrong size");
  if (channels > 0 ? shape.channels != channels : shape.channels != 1 && shape.channels != 3)
    fail("an op delivered the wrong number of channels");
  flip.apply(sample);
  flip_v.apply(sample);
  distort.apply(sample);
}

// The decoder reused across inputs, as a pipeline worker reuses its own: a whole decode, then a window
// of the same file at a random DCT scale, which must equal the crop of a whole decode at that scale.
void check_window_is_exact(std::span<const std::uint8_t> data, conveyor::Rng& rng) {
  static ops::JpegDecoder decoder;
  static conveyor::Image whole, window;
  ops::DecodeOptions options = decode_options(rng);
  options.warnings_are_errors = true;  // corrupt data is allowed to decode differently by window
  const int denom = 1 << rng.below(4);
  try {
    decoder.open(data, options);
    whole.reshape(decoder.shape(denom));
    decoder.read(whole.view(), denom);
  } catch (const DecodeError&) {
    return;
  }
  const conveyor::ImageShape shape = whole.shape();
  const int x = static_cast<int>(rng.below(static_cast<std::uint64_t>(shape.width)));
  const int y = static_cast<int>(rng.below(static_cast<std::uint64_t>(shape.height)));
  const int w = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(shape.width - x)));
  const int h = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(shape.height - y)));
  window.reshape({h, w, shape.channels});
  decoder.open(data, options);  // decoded once already without a warning: must decode again
  decoder.read_region({x, y, w, h}, window.view(), denom);
  const conveyor::ConstImageView a = whole.view(), b = window.view();
  for (int row = 0; row < h; ++row) {
    for (int i = 0; i < w * shape.channels; ++i) {
      if (a.at(y + row, x)[i] == b.row(row)[i]) continue;
      std::fprintf(
          stderr,
          "fuzz_decode: %dx%dx%d image at 1/%d (colour mode %d, fast %d, EXIF %d): window %dx%d+%d+%d "
          "differs at row %d, column %d, channel %d: %d in the window, %d in the whole decode\n",
          shape.height, shape.width, shape.channels, denom, static_cast<int>(options.color), options.fast,
          options.apply_exif_orientation, w, h, x, y, row, i / shape.channels, i % shape.channels,
          b.row(row)[i], a.at(y + row, x)[i]);
      fail("a window decode differs from the crop of the whole decode");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  const std::uint64_t seed = XXH3_64bits(data, size);
  conveyor::Rng rng(seed, 0xf022);

  conveyor::Sample sample;
  sample.encoded.assign(data, data + size);
  sample.seed = seed;

  const ops::DecodeOptions options = decode_options(rng);
  run_chain(ops::decode(options), sample, 0,
            options.color == ops::ColorMode::rgb    ? 3
            : options.color == ops::ColorMode::gray ? 1
                                                    : 0);

  ops::RandomResizedCropOptions crop;
  crop.decode = decode_options(rng);
  crop.scale_min = rng.uniform(0.01, 0.5);
  crop.scale_max = rng.uniform(crop.scale_min, 1.0);
  crop.interpolation = rng.bernoulli(0.5) ? ops::Interpolation::linear : ops::Interpolation::area;
  const int size_out = 1 + static_cast<int>(rng.below(48));
  const int channels = crop.decode.color == ops::ColorMode::rgb    ? 3
                       : crop.decode.color == ops::ColorMode::gray ? 1
                                                                   : 0;
  run_chain(ops::decode_random_resized_crop(size_out, crop), sample, size_out, channels);

  const int centre = 1 + static_cast<int>(rng.below(32));
  run_chain(ops::decode_center_crop(centre, decode_options(rng)), sample, centre, 0);

  check_window_is_exact(bytes, rng);
  return 0;
}
