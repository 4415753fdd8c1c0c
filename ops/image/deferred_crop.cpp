#include "conveyor/ops/deferred_crop.h"

#include <cstring>
#include <string>
#include <type_traits>

#include "conveyor/defer.h"
#include "conveyor/error.h"
#include "conveyor/ops/random_resized_crop.h"

namespace conveyor::ops {

static_assert(std::is_trivially_copyable_v<DeferredCrop>, "a descriptor travels as bytes");
static_assert(sizeof(DeferredCrop) <= kMaxDeferredDescriptor, "the descriptor must fit Sample::defer");

const char* deferral_refusal(const JpegHeader& header, const DecodeOptions& decode, int decoded_channels,
                             Interpolation interpolation, ImageShape slot) noexcept {
  if (header.components == 4 || header.color_space == JpegColorSpace::cmyk ||
      header.color_space == JpegColorSpace::ycck)
    return "cmyk";
  if (header.arithmetic) return "arithmetic_coding";
  if (decode.apply_exif_orientation && header.orientation != 1) return "exif_orientation";
  if (decoded_channels != slot.channels) return "channels";
  if (header.components == 1 && decoded_channels == 3) return "gray";
  if (interpolation != Interpolation::linear) return "interpolation";
  return nullptr;
}

std::span<const std::byte> as_bytes(const DeferredCrop& crop) noexcept {
  return {reinterpret_cast<const std::byte*>(&crop), sizeof crop};
}

std::optional<DeferredCrop> read_deferred_crop(std::span<const std::byte> descriptor) noexcept {
  DeferredCrop crop;
  if (descriptor.size() != sizeof crop) return std::nullopt;
  std::memcpy(&crop, descriptor.data(), sizeof crop);
  if (crop.tag != DeferredCrop::kTag) return std::nullopt;
  return crop;
}

void decode_deferred_crop(std::span<const std::uint8_t> jpeg, const DeferredCrop& crop, ImageView out) {
  if (out.shape() != crop.output)
    throw InvalidArgument(
        "decode_deferred_crop: the output is not the slot shape the sample was deferred for");
  JpegDecoder decoder;
  decoder.open(jpeg, crop.decode);
  const ImageShape full = decoder.shape();
  if (full.width != crop.image_width || full.height != crop.image_height)
    throw InvalidArgument("decode_deferred_crop: the image is " + std::to_string(full.width) + "x" +
                          std::to_string(full.height) + ", the descriptor was made for " +
                          std::to_string(crop.image_width) + "x" + std::to_string(crop.image_height));
  decode_resized_window(decoder, crop.window, out, crop.interpolation);
}

}  // namespace conveyor::ops
