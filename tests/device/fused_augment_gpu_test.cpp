// The fused GPU augmentation against its CPU definition (the flip_horizontal and distort SampleOps, then
// ops::normalize_batch), bit for bit, for every element type and layout. Skips without a GPU. A mismatch
// prints the first differing element: image, pixel, channel, both values, the uint8 each came from, and
// that image's parameters.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "augment_reference.h"
#include "conveyor/error.h"
#include "conveyor/ops/normalize.h"
#include "conveyor/ops/sample_ops.h"
#include "gpu_stage_support.h"
#include "src/core/float16.h"
#include "src/device/augment/gpu_augmenter.h"
#include "src/device/normalize.h"
#include "support/watchdog.h"

namespace conveyor::cuda {
namespace {

using namespace std::chrono_literals;
using testing::CpuAugmentChain;

constexpr ops::DistortOptions kJitter{.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1};

GpuAugmentOptions gpu_options(const CpuAugmentChain& chain, int depth = 3) {
  GpuAugmentOptions options;
  if (chain.flip_p) options.draws.flip = FlipDraw{*chain.flip_p, op_stream(ops::stream::flip_horizontal, 0)};
  if (chain.distort) options.draws.distort = DistortDraw{*chain.distort, op_stream(ops::stream::distort, 1)};
  options.normalize = chain.normalize;
  options.depth = depth;
  return options;
}

float element_at(const std::vector<std::uint8_t>& bytes, std::size_t i, ops::ElementType type) {
  if (type == ops::ElementType::float32) {
    float v;
    std::memcpy(&v, bytes.data() + 4 * i, 4);
    return v;
  }
  std::uint16_t h;
  std::memcpy(&h, bytes.data() + 2 * i, 2);
  return type == ops::ElementType::float16 ? nn::half_to_float(h) : nn::bfloat16_to_float(h);
}

std::string describe(const SampleAugment& p) {
  static const char* kNames[] = {"brightness", "contrast", "saturation", "hue"};
  std::ostringstream out;
  out << "flip " << p.flip << ", contrast " << p.color.has_contrast;
  for (int pass = 0; pass < 2; ++pass) {
    out << "; pass " << pass << ":";
    for (int s = 0; s < p.color.passes[pass].count; ++s)
      out << " " << kNames[static_cast<int>(p.color.passes[pass].steps[s].what)] << " "
          << p.color.passes[pass].steps[s].factor;
  }
  return out.str();
}

// Empty when equal; else where and how they first differ.
std::string first_difference(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& expected,
                             ImageShape shape, const GpuAugmentOptions& options,
                             const std::vector<std::uint64_t>& seeds) {
  const ops::NormalizeParams& normalize = options.normalize;
  const int channels = shape.channels;
  if (got == expected) return {};
  if (got.size() != expected.size())
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(expected.size());
  const std::size_t elements = got.size() / ops::element_size(normalize.type);
  std::size_t differing = 0, first = elements;
  for (std::size_t i = 0; i < elements; ++i)
    if (element_at(got, i, normalize.type) != element_at(expected, i, normalize.type) &&
        !(std::isnan(element_at(got, i, normalize.type)) &&
          std::isnan(element_at(expected, i, normalize.type)))) {
      ++differing;
      if (first == elements) first = i;
    }
  const std::size_t per_image = shape.bytes(), pixels = per_image / channels;
  const std::size_t image = first / per_image, rest = first % per_image;
  const std::size_t channel = normalize.layout == ops::TensorLayout::chw ? rest / pixels : rest % channels;
  const std::size_t pixel = normalize.layout == ops::TensorLayout::chw ? rest % pixels : rest / channels;
  const float g = element_at(got, first, normalize.type), e = element_at(expected, first, normalize.type);
  const auto level = [&](float v) { return v * normalize.std[channel] + normalize.mean[channel]; };
  std::vector<SampleAugment> params(seeds.size());
  draw_augment_params(seeds, channels, options.draws, params);
  std::ostringstream out;
  out << differing << " of " << elements << " elements differ; first: image " << image << " pixel (x "
      << pixel % shape.width << ", y " << pixel / shape.width << ") channel " << channel << ": GPU " << g
      << " (level " << level(g) << "), CPU " << e << " (level " << level(e)
      << "); that image's parameters: " << describe(params[image]);
  return out.str();
}

struct Case {
  const char* name;
  std::optional<ops::DistortOptions> distort;
  int channels;
  ImageShape shape;
  std::size_t count;
};

const Case kCases[] = {
    {"flip + all four adjustments, 224x224", kJitter, 3, {224, 224, 3}, 16},
    {"contrast only (first pass empty)", ops::DistortOptions{.contrast = 0.9}, 3, {37, 53, 3}, 24},
    {"strong saturation and hue", ops::DistortOptions{.saturation = 2.0, .hue = 0.5}, 3, {41, 29, 3}, 24},
    {"gray", ops::DistortOptions{.brightness = 0.6, .contrast = 0.6}, 1, {33, 47, 1}, 24},
    {"flip only", std::nullopt, 3, {19, 23, 3}, 24},
};

class FusedAugmentGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    CONVEYOR_SKIP_WITHOUT_GPU();
    guard_.emplace(0);
    pool_.emplace(0);
    stream_.emplace();
  }
  std::optional<DeviceGuard> guard_;
  std::optional<DeviceMemoryPool> pool_;
  std::optional<Stream> stream_;
};

TEST_F(FusedAugmentGpu, EqualsTheCpuChainBitForBit) {
  const testing::Watchdog watchdog(120s, "EqualsTheCpuChainBitForBit");
  for (const Case& c : kCases) {
    const auto images = testing::make_pictures(c.count, c.shape, 60);
    const auto seeds = testing::sample_seeds(c.count, 17);
    const DeviceBuffer in = testing::upload(*pool_, images, stream_->get());
    for (const ops::ElementType type :
         {ops::ElementType::float32, ops::ElementType::float16, ops::ElementType::bfloat16})
      for (const ops::TensorLayout layout : {ops::TensorLayout::chw, ops::TensorLayout::hwc}) {
        const CpuAugmentChain chain{.flip_p = 0.5,
                                    .distort = c.distort,
                                    .normalize = testing::imagenet_normalize(type, layout, c.channels)};
        const auto expected = testing::cpu_augment(images.data(), c.count, c.shape, seeds, chain);
        GpuAugmenter augmenter(0, *pool_, gpu_options(chain));
        DeviceBuffer out = pool_->allocate(expected.size(), stream_->get(), "test output");
        augmenter.run({in.as<std::uint8_t>(), c.count, c.shape, c.shape.bytes()}, seeds, out.data(),
                      stream_->get());
        const auto got = testing::download(out.data(), expected.size(), stream_->get());
        const std::string difference = first_difference(got, expected, c.shape, augmenter.options(), seeds);
        EXPECT_TRUE(difference.empty())
            << c.name << ", type " << static_cast<int>(type) << ", layout "
            << (layout == ops::TensorLayout::chw ? "NCHW" : "NHWC") << ": " << difference;
      }
  }
}

// FeederOptions::kernel_blocks_per_image: the kernels loop over the pixels with whatever blocks they have.
TEST_F(FusedAugmentGpu, FewerBlocksPerImageGiveTheSameBytes) {
  const testing::Watchdog watchdog(60s, "FewerBlocksPerImageGiveTheSameBytes");
  const Case& c = kCases[0];  // every adjustment, contrast's channel sums included, 224x224
  const auto images = testing::make_pictures(c.count, c.shape, 61);
  const auto seeds = testing::sample_seeds(c.count, 18);
  const DeviceBuffer in = testing::upload(*pool_, images, stream_->get());
  const CpuAugmentChain chain{.flip_p = 0.5,
                              .distort = c.distort,
                              .normalize = testing::imagenet_normalize(ops::ElementType::bfloat16,
                                                                       ops::TensorLayout::hwc, c.channels)};
  const auto expected = testing::cpu_augment(images.data(), c.count, c.shape, seeds, chain);
  for (const int blocks : {1, 2, 7}) {
    GpuAugmentOptions options = gpu_options(chain);
    options.blocks_per_image = blocks;
    GpuAugmenter augmenter(0, *pool_, options);
    DeviceBuffer out = pool_->allocate(expected.size(), stream_->get(), "test output");
    augmenter.run({in.as<std::uint8_t>(), c.count, c.shape, c.shape.bytes()}, seeds, out.data(),
                  stream_->get());
    const auto got = testing::download(out.data(), expected.size(), stream_->get());
    const std::string difference = first_difference(got, expected, c.shape, augmenter.options(), seeds);
    EXPECT_TRUE(difference.empty()) << blocks << " blocks per image: " << difference;
  }
}

// Parameters of batch k live in ring slot k % depth: batches queued back to back without waiting must each
// keep their own.
TEST_F(FusedAugmentGpu, BatchesQueuedBackToBackKeepTheirOwnParameters) {
  const testing::Watchdog watchdog(60s, "BatchesQueuedBackToBackKeepTheirOwnParameters");
  const ImageShape shape{64, 64, 3};
  const std::size_t count = 8, batches = 7;
  const auto images = testing::make_pictures(count, shape, 70);
  const DeviceBuffer in = testing::upload(*pool_, images, stream_->get());
  const CpuAugmentChain chain{
      .flip_p = 0.5,
      .distort = kJitter,
      .normalize = testing::imagenet_normalize(ops::ElementType::float16, ops::TensorLayout::chw, 3)};
  const GpuAugmentOptions options = gpu_options(chain, 2);
  GpuAugmenter augmenter(0, *pool_, options);
  const std::size_t out_bytes = count * shape.bytes() * 2;
  std::vector<DeviceBuffer> outs;
  std::vector<std::vector<std::uint64_t>> seeds;
  for (std::size_t b = 0; b < batches; ++b) {
    seeds.push_back(testing::sample_seeds(count, 100 + b));
    outs.push_back(pool_->allocate(out_bytes, stream_->get(), "test output"));
    augmenter.run({in.as<std::uint8_t>(), count, shape, shape.bytes()}, seeds[b], outs[b].data(),
                  stream_->get());
  }
  for (std::size_t b = 0; b < batches; ++b) {
    const auto expected = testing::cpu_augment(images.data(), count, shape, seeds[b], chain);
    const auto got = testing::download(outs[b].data(), out_bytes, stream_->get());
    EXPECT_TRUE(got == expected) << "batch " << b << ": "
                                 << first_difference(got, expected, shape, options, seeds[b]);
  }
}

TEST_F(FusedAugmentGpu, ReadsImagesThatAreFurtherApartThanTheirSize) {
  const ImageShape shape{30, 40, 3};
  const std::size_t count = 6, stride = shape.bytes() + 1000;
  const auto images = testing::make_pictures(count, shape, 80);
  std::vector<std::uint8_t> spread(count * stride, 0xEE);
  for (std::size_t i = 0; i < count; ++i)
    std::memcpy(spread.data() + i * stride, images.data() + i * shape.bytes(), shape.bytes());
  const DeviceBuffer in = testing::upload(*pool_, spread, stream_->get());
  const auto seeds = testing::sample_seeds(count, 18);
  const CpuAugmentChain chain{
      .flip_p = 0.5,
      .distort = kJitter,
      .normalize = testing::imagenet_normalize(ops::ElementType::float32, ops::TensorLayout::hwc, 3)};
  const auto expected = testing::cpu_augment(images.data(), count, shape, seeds, chain);
  GpuAugmenter augmenter(0, *pool_, gpu_options(chain));
  DeviceBuffer out = pool_->allocate(expected.size(), stream_->get(), "test output");
  augmenter.run({in.as<std::uint8_t>(), count, shape, stride}, seeds, out.data(), stream_->get());
  const auto got = testing::download(out.data(), expected.size(), stream_->get());
  EXPECT_TRUE(got == expected) << first_difference(got, expected, shape, augmenter.options(), seeds);
}

// With no random augmentation the stage is the GPU normalize it supersedes: the same bits.
TEST_F(FusedAugmentGpu, WithoutAugmentationItIsNormalize) {
  const ImageShape shape{48, 56, 3};
  const std::size_t count = 5;
  const auto images = testing::make_pictures(count, shape, 90);
  const DeviceBuffer in = testing::upload(*pool_, images, stream_->get());
  const auto seeds = testing::sample_seeds(count, 19);
  GpuAugmentOptions options;
  options.normalize = testing::imagenet_normalize(ops::ElementType::bfloat16, ops::TensorLayout::chw, 3);
  GpuAugmenter augmenter(0, *pool_, options);
  const std::size_t bytes = count * shape.bytes() * 2;
  DeviceBuffer fused = pool_->allocate(bytes, stream_->get(), "fused output");
  DeviceBuffer plain = pool_->allocate(bytes, stream_->get(), "normalize output");
  augmenter.run({in.as<std::uint8_t>(), count, shape, shape.bytes()}, seeds, fused.data(), stream_->get());
  ops::normalize_batch_cuda(in.as<std::uint8_t>(), count, shape, options.normalize, plain.data(),
                            stream_->get());
  EXPECT_TRUE(testing::download(fused.data(), bytes, stream_->get()) ==
              testing::download(plain.data(), bytes, stream_->get()));
}

// The GPU's draws, seen in what it writes (the probes of augment_reference.h, read as the CPU chain's are in
// AugmentParams.TheCpuChainsProbesShowTheDocumentedFlipRateAndBrightnessRange): mirrored at the flip's
// rate, brightened by factors uniform over [0.6, 1.4], both ends reached.
TEST_F(FusedAugmentGpu, ProbesShowTheDocumentedFlipRateAndBrightnessRange) {
  const testing::Watchdog watchdog(60s, "ProbesShowTheDocumentedFlipRateAndBrightnessRange");
  const auto probes = testing::make_probes(testing::kProbeCount);
  const auto seeds = testing::sample_seeds(testing::kProbeCount, 24);
  ops::NormalizeParams levels;
  levels.layout = ops::TensorLayout::hwc;
  const CpuAugmentChain chain{
      .flip_p = 0.5, .distort = ops::DistortOptions{.brightness = 0.4}, .normalize = levels};
  GpuAugmenter augmenter(0, *pool_, gpu_options(chain));
  const DeviceBuffer in = testing::upload(*pool_, probes, stream_->get());
  const std::size_t bytes = probes.size() * sizeof(float);
  DeviceBuffer out = pool_->allocate(bytes, stream_->get(), "test output");
  augmenter.run({in.as<std::uint8_t>(), seeds.size(), testing::kProbeShape, testing::kProbeShape.bytes()},
                seeds, out.data(), stream_->get());
  testing::expect_probes_follow(testing::download(out.data(), bytes, stream_->get()), seeds.size(), 0.5, 0.4);
}

TEST_F(FusedAugmentGpu, BadArgumentsAreRefused) {
  const ImageShape shape{8, 8, 3};
  const DeviceBuffer in =
      testing::upload(*pool_, std::vector<std::uint8_t>(4 * shape.bytes()), stream_->get());
  DeviceBuffer out = pool_->allocate(4 * shape.bytes() * 4, stream_->get(), "test output");
  GpuAugmentOptions options;
  options.draws.distort = DistortDraw{kJitter, op_stream(ops::stream::distort, 1)};
  GpuAugmenter augmenter(0, *pool_, options);
  const auto three = testing::sample_seeds(3, 20);
  EXPECT_THROW(
      augmenter.run({in.as<std::uint8_t>(), 4, shape, shape.bytes()}, three, out.data(), stream_->get()),
      InvalidArgument);
  const auto four = testing::sample_seeds(4, 20);
  EXPECT_THROW(augmenter.run({in.as<std::uint8_t>(), 4, {8, 8, 4}, 256}, four, out.data(), stream_->get()),
               InvalidArgument);
  EXPECT_THROW(
      augmenter.run({in.as<std::uint8_t>(), 4, shape, shape.bytes() - 1}, four, out.data(), stream_->get()),
      InvalidArgument);
  GpuAugmentOptions bad = options;
  bad.normalize.std[1] = 0.f;
  EXPECT_THROW(GpuAugmenter(0, *pool_, bad), InvalidArgument);
  bad = options;
  bad.draws.distort->options.hue = 0.9;
  EXPECT_THROW(GpuAugmenter(0, *pool_, bad), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::cuda
