#include "src/device/nvjpeg/gpu_decode_plan.h"

#include <string_view>

#include "conveyor/error.h"
#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/ops/deferred_crop.h"

namespace conveyor::cuda {

const char* to_string(GpuDecodeFallback fallback) noexcept {
  switch (fallback) {
    case GpuDecodeFallback::none:
      return "none";
    case GpuDecodeFallback::unreadable:
      return "unreadable";
    case GpuDecodeFallback::too_large:
      return "too_large";
    case GpuDecodeFallback::cmyk:
      return "cmyk";
    case GpuDecodeFallback::arithmetic_coding:
      return "arithmetic_coding";
    case GpuDecodeFallback::exif_orientation:
      return "exif_orientation";
    case GpuDecodeFallback::gray:
      return "gray";
    case GpuDecodeFallback::size_mismatch:
      return "size_mismatch";
    case GpuDecodeFallback::not_supported:
      return "not_supported";
    case GpuDecodeFallback::decode_failed:
      return "decode_failed";
    case GpuDecodeFallback::engines_refused:
      return "engines_refused";
  }
  return "unknown";
}

GpuDecodePlan plan_random_resized_crop(std::span<const std::uint8_t> jpeg,
                                       const ops::RandomResizedCropOptions& options, std::uint64_t seed,
                                       std::uint64_t stream) {
  GpuDecodePlan plan;
  ops::JpegHeader header;
  try {
    header = ops::read_jpeg_header(jpeg, options.decode.apply_exif_orientation);
  } catch (const DecodeError&) {
    plan.fallback = GpuDecodeFallback::unreadable;
    return plan;
  }
  plan.width = header.width;
  plan.height = header.height;
  plan.progressive = header.progressive;
  const auto pixels = static_cast<std::uint64_t>(header.width) * static_cast<std::uint64_t>(header.height);
  if (pixels > options.decode.max_pixels) {
    plan.fallback = GpuDecodeFallback::too_large;
    return plan;
  }
  // What the CPU op decodes to, and so the slot it fills.
  const int channels = options.decode.color == ops::ColorMode::gray   ? 1
                       : options.decode.color == ops::ColorMode::keep ? (header.components == 1 ? 1 : 3)
                                                                      : 3;
  const char* refusal =
      ops::deferral_refusal(header, options.decode, channels, ops::Interpolation::linear, {1, 1, channels});
  if (refusal == nullptr) {
    // The CPU op draws from the shape JpegDecoder reports, which for an upright image is the stored one.
    plan.window = ops::draw_random_resized_crop_window(header.height, header.width, options, seed, stream);
    return plan;
  }
  const std::string_view why = refusal;
  plan.fallback = why == "cmyk"                ? GpuDecodeFallback::cmyk
                  : why == "arithmetic_coding" ? GpuDecodeFallback::arithmetic_coding
                  : why == "exif_orientation"  ? GpuDecodeFallback::exif_orientation
                  : why == "gray"              ? GpuDecodeFallback::gray
                                               : GpuDecodeFallback::not_supported;
  return plan;
}

}  // namespace conveyor::cuda
