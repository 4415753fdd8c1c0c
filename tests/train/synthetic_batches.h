// A tiny, separable image classification problem for training tests: class k's images are noise with a
// bright patch in quadrant k (of 4).
#pragma once

#include <cstdint>

#include "conveyor/batch.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/random.h"

namespace conveyor::testing {

struct HostBatch {
  PageableBatchBuffer buffer;
  std::size_t size;

  // The batch as a trainer takes it, in host memory (a feeder on the CPU: no copy).
  DeviceBatch staged() const { return DeviceFeeder(Placement{}, {.depth = 1}).stage(buffer.batch(size)); }
  // Copied to GPU `device` by a feeder.
  DeviceBatch on_gpu(int device) const {
    Placement placement;
    placement.gpu = true;
    placement.device = device;
    return DeviceFeeder(placement, {.depth = 1}).stage(buffer.batch(size));
  }
  ImageView image(std::size_t i) const { return buffer.slot(i); }
  std::span<std::int64_t> labels() const { return buffer.labels().first(size); }
};

inline HostBatch quadrant_batch(std::size_t count, ImageShape shape, std::uint64_t seed) {
  HostBatch b{PageableBatchBuffer(count, shape), count};
  Rng rng(seed);
  for (std::size_t i = 0; i < count; ++i) {
    const auto label = static_cast<int>(rng.below(4));
    b.buffer.labels()[i] = label;
    ImageView image = b.buffer.slot(i);
    for (int y = 0; y < shape.height; ++y)
      for (int x = 0; x < shape.width; ++x) {
        const bool lit =
            (y >= shape.height / 2) == (label / 2 == 1) && (x >= shape.width / 2) == (label % 2 == 1);
        for (int c = 0; c < shape.channels; ++c)
          image.data[static_cast<std::size_t>(y) * image.stride +
                     static_cast<std::size_t>(x) * shape.channels + c] =
              static_cast<std::uint8_t>((lit ? 150 : 20) + rng.below(80));
      }
  }
  return b;
}

}  // namespace conveyor::testing
