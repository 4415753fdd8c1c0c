#include "augment_reference.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "conveyor/sample.h"
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

}  // namespace conveyor::testing
