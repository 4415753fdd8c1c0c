#include "augment_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "conveyor/sample.h"
#include "support/distribution_checks.h"
#include "support/test_images.h"

namespace conveyor::testing {

std::vector<std::uint8_t> cpu_augment(const std::uint8_t* images, std::size_t count, ImageShape shape,
                                      std::span<const std::uint64_t> seeds, const CpuAugmentChain& chain,
                                      std::vector<std::uint8_t>* augmented) {
  // The flip draws as the map at position 0 of a chain, the distort as the one at position 1.
  std::vector<std::pair<std::uint32_t, SampleOp>> ops_chain;
  if (chain.flip_p) ops_chain.emplace_back(0, ops::flip_horizontal(*chain.flip_p));
  if (chain.distort) ops_chain.emplace_back(1, ops::distort(*chain.distort));
  std::vector<std::uint8_t> pixels(count * shape.bytes());
  for (std::size_t i = 0; i < count; ++i) {
    Sample sample;
    sample.seed = seeds[i];
    const ImageView input = sample.output(shape);
    std::memcpy(input.data, images + i * shape.bytes(), shape.bytes());
    sample.publish();
    for (const auto& [position, op] : ops_chain) {
      sample.op_position = position;
      op.apply(sample);
    }
    const ConstImageView result = sample.image();
    for (int y = 0; y < shape.height; ++y)
      std::memcpy(
          pixels.data() + i * shape.bytes() + static_cast<std::size_t>(y) * shape.width * shape.channels,
          result.row(y), static_cast<std::size_t>(shape.width) * shape.channels);
  }
  std::vector<std::uint8_t> out(count * shape.bytes() * ops::element_size(chain.normalize.type));
  ops::normalize_batch(pixels.data(), count, shape, chain.normalize, out.data());
  if (augmented != nullptr) *augmented = std::move(pixels);
  return out;
}

std::vector<std::uint8_t> make_pictures(std::size_t count, ImageShape shape, std::uint64_t seed) {
  std::vector<std::uint8_t> pixels(count * shape.bytes());
  for (std::size_t i = 0; i < count; ++i) {
    const Image picture = make_picture(shape.height, shape.width, shape.channels, seed + i);
    std::memcpy(pixels.data() + i * shape.bytes(), picture.data(), shape.bytes());
  }
  return pixels;
}

ops::NormalizeParams imagenet_normalize(ops::ElementType type, ops::TensorLayout layout, int channels) {
  ops::NormalizeParams p;
  if (channels == 3) {
    p.mean = {123.675f, 116.28f, 103.53f, 0.f};
    p.std = {58.395f, 57.12f, 57.375f, 1.f};
  } else {
    p.mean[0] = 114.4f;
    p.std[0] = 57.6f;
  }
  p.type = type;
  p.layout = layout;
  return p;
}

std::vector<std::uint64_t> sample_seeds(std::size_t count, std::uint64_t dataset_seed) {
  std::vector<std::uint64_t> seeds(count);
  for (std::size_t i = 0; i < count; ++i) seeds[i] = sample_seed(dataset_seed, 0, i);
  return seeds;
}

std::vector<std::uint8_t> make_probes(std::size_t count) {
  std::vector<std::uint8_t> pixels(count * kProbeShape.bytes(), 0);
  for (std::size_t i = 0; i < count; ++i) std::fill_n(pixels.data() + i * kProbeShape.bytes(), 3, 100);
  return pixels;
}

void expect_probes_follow(const std::vector<std::uint8_t>& normalized, std::size_t count, double flip_p,
                          double brightness) {
  ASSERT_LT(brightness, 1) << "a factor near 0 would leave the lit pixel black: mirrored or not, unknown";
  ASSERT_EQ(normalized.size(), count * kProbeShape.bytes() * sizeof(float));
  std::vector<float> levels(count * kProbeShape.bytes());
  std::memcpy(levels.data(), normalized.data(), normalized.size());
  std::size_t flipped = 0;
  std::vector<int> factor_levels;
  for (std::size_t i = 0; i < count; ++i) {
    const float* probe = levels.data() + i * kProbeShape.bytes();
    const bool mirrored = probe[0] == 0.f;
    const float* lit = mirrored ? probe + 3 : probe;
    const float* dark = mirrored ? probe : probe + 3;
    ASSERT_TRUE(lit[0] == lit[1] && lit[1] == lit[2] && dark[0] == 0.f && dark[1] == 0.f && dark[2] == 0.f)
        << "probe " << i << " is not a lit and a black pixel: " << probe[0] << " " << probe[3];
    flipped += mirrored;
    factor_levels.push_back(static_cast<int>(lit[0]));
  }
  EXPECT_TRUE(succeeds_with_probability(flipped, count, flip_p)) << "flip rate";
  // Level k comes out when 100 f < k + 1 (factors that land on a level's edge, where float rounding could
  // go either way, weigh less than 1e-4 together).
  const double lo = std::max(0.0, 1 - brightness), hi = 1 + brightness;
  const int lowest = static_cast<int>(std::floor(100 * lo + 1e-9));
  const int highest = static_cast<int>(std::ceil(100 * hi - 1e-9)) - 1;
  EXPECT_TRUE(follows_integer_cdf(
      factor_levels, lowest, highest,
      [lo, hi](int k) { return std::clamp(((k + 1) / 100.0 - lo) / (hi - lo), 0.0, 1.0); }, 1e-4))
      << "brightness levels";
  const auto [min, max] = std::minmax_element(factor_levels.begin(), factor_levels.end());
  EXPECT_EQ(*min, lowest) << "the lower end of the brightness factor's interval";
  EXPECT_EQ(*max, highest) << "the upper end of the brightness factor's interval";
}

}  // namespace conveyor::testing
