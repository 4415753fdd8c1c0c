// Which JPEGs the GPU decoder may take, and the crop window of each, decided on the CPU from the header:
// the window is drawn by the same function the CPU op calls (ops::draw_random_resized_crop_window), from
// the same header dimensions, so a sample gets the same window whichever decoder takes it. Images the GPU
// must not take carry the reason, so that the caller can decode them on the CPU and count them by reason.
// The op itself decides the same way when it defers (ops::deferral_refusal); this is the standalone form,
// for benchmarks and tests that feed the decoder by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "conveyor/ops/random_resized_crop.h"
#include "conveyor/ops/rect.h"

namespace conveyor::cuda {

// Why an image goes to the CPU instead of the GPU decoder.
enum class GpuDecodeFallback : std::uint8_t {
  none,               // the GPU decoder takes it
  unreadable,         // libjpeg cannot read its header: the CPU path reports the DecodeError
  too_large,          // more pixels than DecodeOptions::max_pixels: the CPU path refuses it
  cmyk,               // four components (CMYK or YCCK)
  arithmetic_coding,  // nvJPEG decodes Huffman-coded JPEGs only
  exif_orientation,   // turning images upright was asked for and this one is not upright
  gray,               // a one-component JPEG into RGB (nvJPEG's colour output of gray files is unspecified)
  not_supported,      // nvJPEG's parser or its own check refused it
  decode_failed,      // nvJPEG failed while decoding it
  size_mismatch,      // nvJPEG reads other dimensions than libjpeg did (the window would not fit)
  engines_refused,    // the hardware engines refused it, and nvJPEG's GPU hybrid path is off
                      // (DeviceDecode::gpu_hybrid): no Huffman decoding on the SMs
};
inline constexpr std::size_t kGpuDecodeFallbackCount = 11;

// Short, stable name ("cmyk", "not_supported", ...).
const char* to_string(GpuDecodeFallback fallback) noexcept;

struct GpuDecodePlan {
  GpuDecodeFallback fallback = GpuDecodeFallback::none;
  ops::Rect window;  // in the pixels of the image as stored; set when fallback is none
  int width = 0;     // of the image as stored (0 when unreadable)
  int height = 0;
  bool progressive = false;
};

// The plan for the decode_random_resized_crop SampleOp with `options` on the sample with `seed`, whose
// random_resized_crop draws come from Rng stream `stream`. Never throws on bad data (the reason is in the
// plan); throws InvalidArgument on bad options, as the op does.
GpuDecodePlan plan_random_resized_crop(std::span<const std::uint8_t> jpeg,
                                       const ops::RandomResizedCropOptions& options, std::uint64_t seed,
                                       std::uint64_t stream);

}  // namespace conveyor::cuda
