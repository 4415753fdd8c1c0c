// The per-sample parameters of the fused GPU augmentation (flip, colour distortion), drawn on the CPU from
// each sample's seed with the CPU ops' own draws (ops::draw_flip, ops::draw_color_jitter) and planned by
// the CPU's own ops::detail::plan_color: so the GPU applies to a sample exactly what the flip_horizontal and
// distort SampleOps would have. Plain data, copied to the device as it is.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "conveyor/ops/distort.h"
#include "ops/image/distort_kernels.h"

namespace conveyor::cuda {

// The random horizontal flip: mirrors with probability p, drawn from Rng(seed, stream).
struct FlipDraw {
  double p = 0.5;
  std::uint64_t stream = 0;  // the op's whole Rng stream: op_stream(ops::stream::flip_horizontal, position)
};

// The colour distortion: ops::draw_color_jitter(options, Rng(seed, stream)).
struct DistortDraw {
  ops::DistortOptions options;
  std::uint64_t stream = 0;  // the op's whole Rng stream: op_stream(ops::stream::distort, position)
};

// Which random augmentations run, in the CPU chain's order: flip, then distort. (The order of the two does
// not change the result: the flip moves pixels, the distortion changes values and the mean it uses.)
struct AugmentDraws {
  std::optional<FlipDraw> flip;
  std::optional<DistortDraw> distort;
};

// What one sample gets.
struct SampleAugment {
  ops::detail::ColorPlan color;  // contrast's shift is filled in on the GPU, from the image's mean
  std::uint32_t flip = 0;        // 1: mirror left-right
};

// Draws the parameters of seeds.size() samples of `channels` (1 or 3) channels into `out` (same size).
// Throws InvalidArgument on a size mismatch, bad channels or bad options.
void draw_augment_params(std::span<const std::uint64_t> seeds, int channels, const AugmentDraws& draws,
                         std::span<SampleAugment> out);

}  // namespace conveyor::cuda
