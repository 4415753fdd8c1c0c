// The image operations as pipeline stages: each factory returns a SampleOp {name, apply} for
// Dataset::map. An op reads sample.encoded or sample.image() and leaves its result as the sample's
// current image, written through sample.output() + publish() (so the last op of a chain writes straight
// into the sample's batch slot) or in place through sample.mutable_image().
//
// Randomness comes only from sample.rng(<the op's stream below>), that is Rng(sample.seed,
// op_stream(stream::<op>, sample.op_position)): a sample's result never depends on the thread that ran
// it, and two instances of the same random op in one chain (at two positions) draw independently.
// Decoding ops keep one decoder per thread for its buffers; it holds no state between samples. They take
// JPEG and PNG images (PNG: decoded whole, then cut). A decode failure throws DecodeError; the pipeline adds
// the path and the stage.
//
// Fields (conveyor/fields.h): the decoding ops also decode the sample's mask (sample.encoded_mask, a PNG of
// class ids of the image's size), through the same window, by nearest neighbour. Every geometric op (the
// crops, pad, resize, the flips) draws its parameters once and moves the mask and the boxes with the
// image; distort touches the image only. PipelineOptions::fields says what pixels made up outside the
// image hold in the mask and which boxes are dropped.
#pragma once

#include <cstdint>

#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/ops/distort.h"
#include "conveyor/ops/pad.h"
#include "conveyor/ops/random_resized_crop.h"
#include "conveyor/ops/resize.h"
#include "conveyor/sample.h"

namespace conveyor::ops {

// The kind of each random op: its draws for a sample are Rng(sample.seed, op_stream(stream::<op>, position
// of the op in the chain)) (conveyor/random.h).
namespace stream {
inline constexpr std::uint64_t random_resized_crop = 0x7272632d'00000001;
inline constexpr std::uint64_t random_crop = 0x7263726f'00000002;
inline constexpr std::uint64_t flip_horizontal = 0x666c6970'00000003;
inline constexpr std::uint64_t flip_vertical = 0x666c6970'00000004;
inline constexpr std::uint64_t distort = 0x64697374'00000005;
}  // namespace stream

// sample.encoded -> the whole image (shape from the header); encoded_mask -> the whole mask.
SampleOp decode(DecodeOptions options = {});

// sample.encoded -> size x size: a random window (RandomResizedCrop), only the window decoded, at the DCT
// scale it allows, then resized. As the last map of a chain fed to a GPU that decodes (conveyor/defer.h), it
// reads only the header and draws the window for the samples its policy names, and leaves them to the GPU
// with that window (conveyor/ops/deferred_crop.h), unless the GPU could not take the image.
SampleOp decode_random_resized_crop(int size, RandomResizedCropOptions options = {});

// sample.encoded -> size x size: the evaluation transform (shorter side to `size`, centre crop), only the
// centre decoded, at the DCT scale it allows.
SampleOp decode_center_crop(int size, DecodeOptions options = {});

// image -> height x width at a random place of the image padded by `padding` (torchvision RandomCrop).
SampleOp random_crop(int height, int width, int padding = 0, PadMode mode = PadMode::constant);

// image -> height x width: a random window (RandomResizedCrop) of decoded pixels, resized. For images that
// are decoded already (decode_random_resized_crop decodes only the window); draws what that op draws.
SampleOp random_resized_crop(int size, RandomResizedCropOptions options = {});

// image -> height x width, the centre (torchvision's CenterCrop; a crop larger than the image pads it
// with zeros, and the mask with FieldOptions::mask_fill).
SampleOp center_crop(int height, int width);

// image -> window.height x window.width: the fixed window (it may reach outside the image: padded as
// center_crop pads).
SampleOp crop(Rect window);

// image -> image with margins.
SampleOp pad(int top, int bottom, int left, int right, PadMode mode = PadMode::constant,
             std::uint8_t value = 0);

// What flip_horizontal and distort carry in SampleOp::spec, with their GPU twins' names "flip_horizontal" and
// "distort" in SampleOp::gpu_twin: their parameters and the kind of their Rng stream, so that a feeder can
// run the same op on the GPU (their twins in GpuTwins::library(), conveyor/cuda/gpu_twins.h, which know the
// op's position k in the chain and draw from op_stream(stream, k) as the op would).
struct FlipHorizontalSpec {
  double p = 0.5;
  std::uint64_t stream = stream::flip_horizontal;
};
struct DistortSpec {
  DistortOptions options;
  std::uint64_t stream = stream::distort;
};

// What decode_random_resized_crop carries in SampleOp::spec (its twin: "decode_random_resized_crop"): as the
// chain's last map it may leave images to a feeder's GPU decoder (DeviceFeeder::feed with
// FeederOptions::decode), which Python's to_device checks before it turns that on.
struct DecodeRandomResizedCropSpec {
  int size = 0;
  RandomResizedCropOptions options;
};

// Mirrors the image in place with probability p.
SampleOp flip_horizontal(double p = 0.5);
SampleOp flip_vertical(double p = 0.5);

// Colour jitter in place (see distort.h), e.g. distort({.brightness = 0.4, .contrast = 0.4, .saturation =
// 0.4}).
SampleOp distort(DistortOptions options);

// image -> height x width.
SampleOp resize(int height, int width, Interpolation interpolation = Interpolation::linear);

}  // namespace conveyor::ops
