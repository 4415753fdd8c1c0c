// A batch where the training step can read it: device memory when the step runs on a GPU, the batch's
// host memory when it runs on the CPU. Produced by DeviceFeeder, consumed by a Trainer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "conveyor/image.h"

namespace conveyor {

struct StagedBatch {
  const std::uint8_t* pixels = nullptr;  // size x shape, NHWC uint8
  const std::int64_t* labels = nullptr;  // size
  std::size_t size = 0;
  ImageShape shape;
  bool on_device = false;
  int device = -1;                        // CUDA device index when on_device
  // CUDA events as opaque handles (cudaEvent_t), so this header needs no CUDA: the step's stream must
  // wait on `ready` before reading, and record `consumed` once it no longer reads the buffers.
  void* ready = nullptr;
  void* consumed = nullptr;
};

}  // namespace conveyor
