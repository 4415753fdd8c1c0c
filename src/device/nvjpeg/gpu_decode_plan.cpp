#include "src/device/nvjpeg/gpu_decode_plan.h"

#include "conveyor/error.h"
#include "conveyor/ops/decode_jpeg.h"

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
    case GpuDecodeFallback::not_supported:
      return "not_supported";
    case GpuDecodeFallback::decode_failed:
      return "decode_failed";
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
  } else if (header.components == 4 || header.color_space == ops::JpegColorSpace::cmyk ||
             header.color_space == ops::JpegColorSpace::ycck) {
    plan.fallback = GpuDecodeFallback::cmyk;
  } else if (header.arithmetic) {
    plan.fallback = GpuDecodeFallback::arithmetic_coding;
  } else if (options.decode.apply_exif_orientation && header.orientation != 1) {
    plan.fallback = GpuDecodeFallback::exif_orientation;
  } else {
    // The CPU op draws from the shape JpegDecoder reports, which for an upright image is the stored one.
    plan.window = ops::draw_random_resized_crop_window(header.height, header.width, options, seed, stream);
  }
  return plan;
}

}  // namespace conveyor::cuda
