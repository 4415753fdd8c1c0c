// What decode_random_resized_crop leaves for a decoder after batching when it defers a sample
// (conveyor/defer.h): the crop window it drew from the header, and what the CPU decode would have used.
// The device feeder's nvJPEG decoder reads it; decode_deferred_crop is the CPU decode of the same sample,
// byte for byte what the op would have written (the feeder's fallback for images nvJPEG refuses).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "conveyor/image.h"
#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/ops/rect.h"
#include "conveyor/ops/resize.h"

namespace conveyor::ops {

struct DeferredCrop {
  static constexpr std::uint32_t kTag = 0x31435252;  // "RRC1": which op wrote the descriptor, which layout
  std::uint32_t tag = kTag;
  Rect window;          // drawn by the op from the header: in the image as stored (it is upright)
  int image_width = 0;  // of the image as stored
  int image_height = 0;
  ImageShape output;  // the sample's slot: size x size x channels
  Interpolation interpolation = Interpolation::linear;
  DecodeOptions decode;  // as the op was given them
};

// Why decode_random_resized_crop decodes a sample itself although its policy asked it to defer: the decoder
// after batching (nvJPEG, linear resize) could not make what the CPU op makes. Short stable names, counted
// by the policy: "cmyk" (four components), "arithmetic_coding", "exif_orientation" (turning upright was
// asked for and the image is not upright), "gray" (a one-component JPEG into RGB: nvJPEG's colour output of
// a gray file is not specified), "channels" (the slot's channels are not what the op decodes to),
// "interpolation" (only linear resizing is done after batching). Null when it can defer.
const char* deferral_refusal(const JpegHeader& header, const DecodeOptions& decode, int decoded_channels,
                             Interpolation interpolation, ImageShape slot) noexcept;

// The descriptor as bytes (for Sample::defer) and back. read() returns nullopt when the bytes are not a
// DeferredCrop (another op's descriptor, or none).
std::span<const std::byte> as_bytes(const DeferredCrop& crop) noexcept;
std::optional<DeferredCrop> read_deferred_crop(std::span<const std::byte> descriptor) noexcept;

// Decodes the deferred sample on the CPU into `out` (shape crop.output): exactly the pixels
// decode_random_resized_crop writes for it. Throws DecodeError as the op would, InvalidArgument when the
// bytes are not the image the descriptor was made from or `out` has the wrong shape.
void decode_deferred_crop(std::span<const std::uint8_t> jpeg, const DeferredCrop& crop, ImageView out);

}  // namespace conveyor::ops
