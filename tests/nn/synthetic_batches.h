// A tiny, separable image classification problem for training tests: class k's images are noise with a
// bright patch in quadrant k (of 4).
#pragma once

#include <cstdint>
#include <vector>

#include "conveyor/random.h"
#include "conveyor/staged_batch.h"

namespace conveyor::testing {

struct HostBatch {
  std::vector<std::uint8_t> pixels;
  std::vector<std::int64_t> labels;
  ImageShape shape;

  StagedBatch staged() const {
    StagedBatch b;
    b.pixels = pixels.data();
    b.labels = labels.data();
    b.size = labels.size();
    b.shape = shape;
    return b;
  }
};

inline HostBatch quadrant_batch(std::size_t count, ImageShape shape, std::uint64_t seed) {
  HostBatch b{std::vector<std::uint8_t>(count * shape.bytes()), std::vector<std::int64_t>(count), shape};
  Rng rng(seed);
  for (std::size_t i = 0; i < count; ++i) {
    const auto label = static_cast<int>(rng.below(4));
    b.labels[i] = label;
    for (int y = 0; y < shape.height; ++y)
      for (int x = 0; x < shape.width; ++x) {
        const bool lit = (y >= shape.height / 2) == (label / 2 == 1) && (x >= shape.width / 2) == (label % 2 == 1);
        for (int c = 0; c < shape.channels; ++c)
          b.pixels[i * shape.bytes() + (static_cast<std::size_t>(y) * shape.width + x) * shape.channels + c] =
              static_cast<std::uint8_t>((lit ? 150 : 20) + rng.below(80));
      }
  }
  return b;
}

}  // namespace conveyor::testing
