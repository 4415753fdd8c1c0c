// The CPU definition the GPU augmentation must match: the flip_horizontal and distort SampleOps run on each
// image with its sample seed, then ops::normalize_batch.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "conveyor/image.h"
#include "conveyor/ops/distort.h"
#include "conveyor/ops/normalize.h"

namespace conveyor::testing {

struct CpuAugmentChain {
  std::optional<double> flip_p;                // flip_horizontal(p) when set
  std::optional<ops::DistortOptions> distort;  // distort(options) when set
  ops::NormalizeParams normalize;
};

// `count` contiguous uint8 NHWC images of `shape`; returns the normalized batch as bytes (element type and
// layout from chain.normalize). Also returns the uint8 images after flip and distort in `augmented`.
std::vector<std::uint8_t> cpu_augment(const std::uint8_t* images, std::size_t count, ImageShape shape,
                                      std::span<const std::uint64_t> seeds, const CpuAugmentChain& chain,
                                      std::vector<std::uint8_t>* augmented = nullptr);

// Deterministic test images with real structure (make_picture), `count` of `shape`, back to back.
std::vector<std::uint8_t> make_pictures(std::size_t count, ImageShape shape, std::uint64_t seed);

// ImageNet's mean and standard deviation (0..255 scale) for 3 channels, a grey one for 1, in `type` and
// `layout`.
ops::NormalizeParams imagenet_normalize(ops::ElementType type, ops::TensorLayout layout, int channels);

// Seeds as the pipeline makes them: sample_seed(dataset_seed, 0, i).
std::vector<std::uint64_t> sample_seeds(std::size_t count, std::uint64_t dataset_seed);

// Probes that show the augmentation's draws in what it writes, so that the CPU chain and the GPU stage are
// tested alike: 1 x 2 RGB images, a pixel of level 100 on the left and a black one on the right. Through a
// flip and a brightness-only distort, an output shows whether its image was mirrored (where the black pixel
// went) and its brightness factor f as the level trunc(100 f) (brightness keeps black black).
inline constexpr ImageShape kProbeShape{1, 2, 3};
inline constexpr std::size_t kProbeCount = 20000;  // enough that a rate off by 0.02 fails
std::vector<std::uint8_t> make_probes(std::size_t count);

// The probes' outputs, normalized with ops::NormalizeParams{} in HWC (float32, mean 0, std 1: the levels):
// the flip rate is `flip_p` and the factor f ~ U(1 - s, 1 + s) with s = `brightness` < 1, both ends
// reached. GoogleTest expectations.
void expect_probes_follow(const std::vector<std::uint8_t>& normalized, std::size_t count, double flip_p,
                          double brightness);

}  // namespace conveyor::testing
