// The CPU half of the GPU augmentation: per-sample parameters are the CPU ops' own draws, and the kernel's
// arithmetic (color_math.h, run here on the host) gives the CPU chain's bytes. Runs without a GPU.
#include "src/device/augment/augment_params.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "augment_reference.h"
#include "conveyor/error.h"
#include "conveyor/ops/flip.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "src/core/float16.h"
#include "src/device/augment/color_math.h"
#include "support/distribution_checks.h"

namespace conveyor::cuda {
namespace {

using testing::CpuAugmentChain;

constexpr ops::DistortOptions kJitter{.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1};

AugmentDraws default_draws(const ops::DistortOptions& options = kJitter, double p = 0.5) {
  // The streams of testing::cpu_augment's chain: the flip at position 0, the distort at 1.
  return {FlipDraw{p, op_stream(ops::stream::flip_horizontal, 0)},
          DistortDraw{options, op_stream(ops::stream::distort, 1)}};
}

std::vector<SampleAugment> draw(std::span<const std::uint64_t> seeds, int channels,
                                const AugmentDraws& draws) {
  std::vector<SampleAugment> params(seeds.size());
  draw_augment_params(seeds, channels, draws, params);
  return params;
}

// The fused kernel's per-pixel work, on the host: the same functions the kernel calls, in its order.
template <int C>
std::vector<std::uint8_t> host_augment(const std::uint8_t* images, std::size_t count, ImageShape shape,
                                       std::span<SampleAugment> params,
                                       const ops::NormalizeParams& normalize) {
  const int pixels = shape.height * shape.width;
  std::vector<float> values(count * shape.bytes());
  for (std::size_t n = 0; n < count; ++n) {
    SampleAugment p = params[n];
    const std::uint8_t* image = images + n * shape.bytes();
    if (p.color.has_contrast) {
      std::uint64_t sums[3] = {0, 0, 0};
      for (int i = 0; i < pixels; ++i) {
        float v[C];
        for (int c = 0; c < C; ++c) v[c] = image[i * C + c];
        color::apply_pass<C>(p.color.passes[0], v);
        for (int c = 0; c < C; ++c) sums[c] += static_cast<std::uint64_t>(v[c]);
      }
      ops::detail::ColorStep& contrast = p.color.passes[1].steps[0];
      contrast.shift = color::contrast_shift(sums, pixels, C, contrast.factor);
    }
    for (int i = 0; i < pixels; ++i) {
      const int y = i / shape.width, x = p.flip ? shape.width - 1 - i % shape.width : i % shape.width;
      float v[C];
      for (int c = 0; c < C; ++c) v[c] = image[(y * shape.width + x) * C + c];
      color::apply_pass<C>(p.color.passes[0], v);
      color::apply_pass<C>(p.color.passes[1], v);
      for (int c = 0; c < C; ++c) {
        const float scale = 1.f / normalize.std[c], bias = -normalize.mean[c] * scale;
        const float out = std::fma(v[c], scale, bias);
        const std::size_t at = normalize.layout == ops::TensorLayout::chw
                                   ? n * shape.bytes() + static_cast<std::size_t>(c) * pixels + i
                                   : n * shape.bytes() + static_cast<std::size_t>(i) * C + c;
        values[at] = out;
      }
    }
  }
  std::vector<std::uint8_t> bytes(values.size() * ops::element_size(normalize.type));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (normalize.type == ops::ElementType::float32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    } else {
      const std::uint16_t half = normalize.type == ops::ElementType::float16
                                     ? nn::float_to_half(values[i])
                                     : nn::float_to_bfloat16(values[i]);
      std::memcpy(bytes.data() + 2 * i, &half, 2);
    }
  }
  return bytes;
}

TEST(AugmentParams, FlipIsTheFlipOpsDraw) {
  const auto seeds = testing::sample_seeds(256, 11);
  const auto params = draw(seeds, 3, default_draws());
  const ImageShape shape{2, 3, 3};
  std::vector<std::uint8_t> picture(shape.bytes());
  for (std::size_t i = 0; i < picture.size(); ++i) picture[i] = static_cast<std::uint8_t>(i * 13);
  int flipped = 0;
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    std::vector<std::uint8_t> after;
    testing::cpu_augment(picture.data(), 1, shape, {&seeds[i], 1},
                         {.flip_p = 0.5, .distort = std::nullopt, .normalize = {}}, &after);
    const bool op_flipped = after != picture;
    EXPECT_EQ(params[i].flip != 0, op_flipped) << "seed " << seeds[i];
    flipped += op_flipped;
  }
  EXPECT_GT(flipped, 80);  // both outcomes occur: the draw is not constant
  EXPECT_LT(flipped, 176);
}

TEST(AugmentParams, ColorPlanIsTheDistortOpsDraw) {
  const auto seeds = testing::sample_seeds(64, 12);
  const auto params = draw(seeds, 3, default_draws());
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    Rng rng(seeds[i], op_stream(ops::stream::distort, 1));
    const ops::ColorJitter jitter = ops::draw_color_jitter(kJitter, rng);
    const ops::detail::ColorPlan expected = ops::detail::plan_color(jitter, 3);
    const ops::detail::ColorPlan& got = params[i].color;
    ASSERT_EQ(got.has_contrast, expected.has_contrast) << i;
    for (int pass = 0; pass < 2; ++pass) {
      ASSERT_EQ(got.passes[pass].count, expected.passes[pass].count) << i;
      for (int s = 0; s < got.passes[pass].count; ++s) {
        EXPECT_EQ(got.passes[pass].steps[s].what, expected.passes[pass].steps[s].what) << i;
        EXPECT_EQ(got.passes[pass].steps[s].factor, expected.passes[pass].steps[s].factor) << i;
      }
      for (int k = 0; k < 9; ++k) EXPECT_EQ(got.passes[pass].hue[k], expected.passes[pass].hue[k]) << i;
    }
  }
}

TEST(AugmentParams, EachOpsStreamIsAParameter) {
  const auto seeds = testing::sample_seeds(64, 13);
  AugmentDraws moved = default_draws();
  moved.flip->stream = 0x1234;
  moved.distort->stream = 0x5678;
  const auto usual = draw(seeds, 3, default_draws());
  const auto other = draw(seeds, 3, moved);
  int flips_differ = 0, factors_differ = 0;
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    EXPECT_EQ(other[i].flip != 0, ops::draw_flip(0.5, seeds[i], 0x1234));
    Rng rng(seeds[i], 0x5678);
    const ops::ColorJitter jitter = ops::draw_color_jitter(kJitter, rng);
    EXPECT_EQ(other[i].color.passes[0].count + other[i].color.passes[1].count,
              ops::detail::plan_color(jitter, 3).passes[0].count +
                  ops::detail::plan_color(jitter, 3).passes[1].count);
    flips_differ += usual[i].flip != other[i].flip;
    factors_differ += usual[i].color.passes[0].steps[0].factor != other[i].color.passes[0].steps[0].factor;
  }
  EXPECT_GT(flips_differ, 10);
  EXPECT_GT(factors_differ, 50);
}

TEST(AugmentParams, WithoutDrawsNothingChanges) {
  const auto seeds = testing::sample_seeds(8, 14);
  const auto params = draw(seeds, 3, {});
  for (const SampleAugment& p : params) {
    EXPECT_EQ(p.flip, 0u);
    EXPECT_FALSE(p.color.has_contrast);
    EXPECT_EQ(p.color.passes[0].count + p.color.passes[1].count, 0);
  }
  EXPECT_EQ(draw(seeds, 3, default_draws(kJitter, 0.0))[0].flip, 0u);
  for (const SampleAugment& p : draw(seeds, 3, default_draws(kJitter, 1.0))) EXPECT_EQ(p.flip, 1u);
}

TEST(AugmentParams, BadArgumentsAreRefused) {
  const auto seeds = testing::sample_seeds(4, 15);
  std::vector<SampleAugment> three(3), four(4);
  EXPECT_THROW(draw_augment_params(seeds, 3, default_draws(), three), InvalidArgument);
  EXPECT_THROW(draw_augment_params(seeds, 4, default_draws(), four), InvalidArgument);
  EXPECT_THROW(draw_augment_params(seeds, 3, default_draws(kJitter, 1.5), four), InvalidArgument);
  EXPECT_THROW(draw_augment_params(seeds, 3, default_draws({.hue = 0.7}), four), InvalidArgument);
}

// The parameters the GPU gets follow the ops' documented distributions over the pipeline's seeds: flip rate
// p, every factor uniform over [max(0, 1 - s), 1 + s] with both ends reached (contrast's spread above 1
// starts its interval at 0). The hue is the CPU draw's (ColorPlanIsTheDistortOpsDraw), tested with it in
// tests/ops/random_distributions_test.cpp.
TEST(AugmentParams, DrawnParametersFollowTheDocumentedDistributions) {
  constexpr ops::DistortOptions kSpreads{.brightness = 0.4, .contrast = 1.5, .saturation = 0.7, .hue = 0.1};
  const auto seeds = testing::sample_seeds(20000, 22);
  const auto params = draw(seeds, 3, default_draws(kSpreads));
  std::size_t flipped = 0;
  std::vector<double> factors[3];  // brightness, contrast, saturation
  for (const SampleAugment& p : params) {
    flipped += p.flip;
    double found[3] = {1, 1, 1};  // a factor of exactly 1 leaves no step
    for (const ops::detail::ColorPass& pass : p.color.passes)
      for (int s = 0; s < pass.count; ++s)
        if (pass.steps[s].what != ops::ColorAdjustment::hue)
          found[static_cast<int>(pass.steps[s].what)] = pass.steps[s].factor;
    for (int k = 0; k < 3; ++k) factors[k].push_back(found[k]);
  }
  EXPECT_TRUE(testing::succeeds_with_probability(flipped, seeds.size(), 0.5));
  const double spreads[3] = {kSpreads.brightness, kSpreads.contrast, kSpreads.saturation};
  for (int k = 0; k < 3; ++k) {
    const double lo = std::max(0.0, 1 - spreads[k]), hi = 1 + spreads[k];
    constexpr double kFloat = 1e-6;  // the plan holds factors as float
    EXPECT_TRUE(testing::uniform_on(factors[k], lo, hi, kFloat)) << "factor " << k;
    EXPECT_TRUE(testing::reaches_both_ends(factors[k], lo, hi, kFloat)) << "factor " << k;
  }
}

// The CPU chain (the flip_horizontal and distort SampleOps), seen in what it writes: the probes that the GPU
// stage's test (FusedAugmentGpu.ProbesShowTheDocumentedFlipRateAndBrightnessRange) reads the same way.
TEST(AugmentParams, TheCpuChainsProbesShowTheDocumentedFlipRateAndBrightnessRange) {
  const auto probes = testing::make_probes(testing::kProbeCount);
  const auto seeds = testing::sample_seeds(testing::kProbeCount, 23);
  ops::NormalizeParams levels;
  levels.layout = ops::TensorLayout::hwc;
  const CpuAugmentChain chain{
      .flip_p = 0.5, .distort = ops::DistortOptions{.brightness = 0.4}, .normalize = levels};
  testing::expect_probes_follow(
      testing::cpu_augment(probes.data(), seeds.size(), testing::kProbeShape, seeds, chain), seeds.size(),
      0.5, 0.4);
}

struct HostCase {
  const char* name;
  ops::DistortOptions distort;
  int channels;
};

// The kernel's arithmetic, run on the host, gives the bytes of flip -> distort -> normalize on the CPU, for
// every element type and layout, every adjustment order (contrast first, last, in between), gray and RGB.
TEST(AugmentParams, KernelArithmeticOnTheHostIsTheCpuChainBitForBit) {
  const HostCase cases[] = {
      {"all four", kJitter, 3},
      {"contrast only", {.contrast = 0.9}, 3},
      {"strong saturation and hue", {.saturation = 2.0, .hue = 0.5}, 3},
      {"gray brightness and contrast",
       {.brightness = 0.6, .contrast = 0.6, .saturation = 0.5, .hue = 0.2},
       1},
  };
  const std::size_t count = 24;
  for (const HostCase& c : cases) {
    const ImageShape shape{23, 31, c.channels};
    const auto images = testing::make_pictures(count, shape, 40);
    const auto seeds = testing::sample_seeds(count, 16);
    auto params = draw(seeds, c.channels, default_draws(c.distort));
    for (const ops::ElementType type :
         {ops::ElementType::float32, ops::ElementType::float16, ops::ElementType::bfloat16})
      for (const ops::TensorLayout layout : {ops::TensorLayout::chw, ops::TensorLayout::hwc}) {
        const ops::NormalizeParams normalize = testing::imagenet_normalize(type, layout, c.channels);
        const CpuAugmentChain chain{.flip_p = 0.5, .distort = c.distort, .normalize = normalize};
        const auto expected = testing::cpu_augment(images.data(), count, shape, seeds, chain);
        const auto got = c.channels == 3 ? host_augment<3>(images.data(), count, shape, params, normalize)
                                         : host_augment<1>(images.data(), count, shape, params, normalize);
        ASSERT_EQ(got.size(), expected.size());
        EXPECT_TRUE(got == expected) << c.name << ", type " << static_cast<int>(type) << ", layout "
                                     << static_cast<int>(layout);
      }
  }
}

}  // namespace
}  // namespace conveyor::cuda
