// A pixel op of the user's own with a GPU twin: torchvision's RandomInvert (each sample's pixels become
// 255 - value with probability p). The SampleOp runs on the CPU like any map; its twin
// (random_invert_twin.cu) does the same on a GPU feeder's batch, drawing each sample's coin from the same
// seed and stream, so the two give the same bytes and placement may move the op.
#pragma once

#include <cstdint>

#include "conveyor/cuda/gpu_twins.h"
#include "conveyor/sample.h"

namespace gpu_twin_example {

// The op's kind of randomness: its draws for a sample are Rng(seed, op_stream(kInvertStream, its position)).
inline constexpr std::uint64_t kInvertStream = 0x696e7672'00000001;

// What the op carries in SampleOp::spec for its twin.
struct RandomInvertSpec {
  double p = 0.5;
};

// Whether the sample of `seed` is inverted, for an op drawing from `stream` (op_stream(kInvertStream, k)):
// the one draw both twins make.
bool draw_invert(double p, std::uint64_t seed, std::uint64_t stream) noexcept;

// The SampleOp, with its GPU twin's name "random_invert".
conveyor::SampleOp random_invert(double p = 0.5);

// Its GPU twin, for a GpuTwins registry (random_invert_twin.cu; only in builds with CUDA).
conveyor::GpuTwin random_invert_twin();

}  // namespace gpu_twin_example
