// Ops with GPU twins, found by name. A SampleOp names its twin (SampleOp::gpu_twin, its parameters in
// SampleOp::spec); a GpuTwins registry, given to the feeder through FeederOptions::gpu_twins, says what runs
// on the GPU for that name; place_pixel_ops asks it for the chain's trailing ops (DALI's schemas name an
// operator's CPU and GPU implementations the same way; the registry here is an object, not a global).
//
//   GpuTwins twins = GpuTwins::library();                   // flip, distort, GPU decoding
//   twins.add("random_invert", pixel_twin(make_invert_twin));  // a user's pixel op and its CUDA twin
//   FeederOptions options{.normalize = params, .gpu_twins = std::make_shared<GpuTwins>(twins)};
//   BatchedDataset placed = place_pixel_ops(dataset, placement, options);
//
// A twin must make the bytes its SampleOp makes: it draws each sample's parameters from the sample's seed and
// the op's stream, as the op does (the CPU reference of every built-in twin is tested against it).
// This header compiles without CUDA; a twin's own code (a .cu) includes the CUDA runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "conveyor/batch.h"
#include "conveyor/image.h"
#include "conveyor/sample.h"

struct CUstream_st;  // cudaStream_t is a CUstream_st*: the stream type without the CUDA header

namespace conveyor {

struct FeederOptions;

// One batch's pixels where a GPU twin works on them: count x (H, W, C) uint8, contiguous, in the memory of
// CUDA device `device`.
struct DevicePixels {
  std::uint8_t* data = nullptr;
  std::size_t count = 0;
  ImageShape shape;
  int device = 0;
};

// The GPU twin of a pixel op, made once per feeder. The feeder runs it on every batch after the copy (and
// after GPU decoding), in place on the batch's pixels, in the chain's order, before its fused flip, distort
// and normalize; so DeviceBatch::pixels() hold its result.
class DevicePixelOp {
 public:
  virtual ~DevicePixelOp() = default;
  // Enqueues the op on `stream`; samples[i] is who image i is (its seed: the only randomness it may use).
  virtual void run(const DevicePixels& pixels, std::span<const SampleInfo> samples, CUstream_st* stream) = 0;
};

// What the feeder runs for a placed pixel op: its twin, made for the feeder's device, and the op itself at
// its position in the chain (what a feeder on the CPU runs instead, drawing as it would have there).
struct PlacedPixelOp {
  SampleOp op;
  std::uint64_t position = 0;
  std::function<std::unique_ptr<DevicePixelOp>(int device)> make;
};

// What runs on the GPU for a twin's name.
struct GpuTwin {
  // It moves pixels (a flip): for samples whose fields follow the image it stays in the pipeline, which
  // moves them all.
  bool geometric = false;
  // It runs inside the feeder's fused flip + distort + normalize kernel, after every pixel twin: once a pixel
  // twin is placed, no fused op before it in the chain may move.
  bool fused = false;
  // It stays in the chain and may leave images to the feeder's GPU decoder (decode_random_resized_crop).
  bool defers = false;
  // Moves `op`, at `position` among the chain's maps and filters, into `options` (a pixel twin into
  // options.pixel_ops, a fused one into options.augment); false when it cannot (a second flip, no normalize
  // to fuse with), which ends the placement.
  std::function<bool(const SampleOp& op, std::uint64_t position, FeederOptions& options)> place;
};

// The twin of a pixel op whose GPU code `make` builds for a feeder's device from the op (its spec) and its
// position in the chain (its Rng stream is op_stream(its kind, position)).
GpuTwin pixel_twin(
    std::function<std::unique_ptr<DevicePixelOp>(const SampleOp& op, std::uint64_t position, int device)>
        make);

class GpuTwins {
 public:
  // The library's twins: flip_horizontal and distort (fused with normalize), decode_random_resized_crop
  // (GPU decoding of a share of the images).
  static GpuTwins library();

  // Adds the twin of `name`, or replaces it.
  GpuTwins& add(std::string name, GpuTwin twin);
  // The twin of `name`, or null (also for an empty name).
  const GpuTwin* find(std::string_view name) const noexcept;

 private:
  std::map<std::string, GpuTwin, std::less<>> twins_;
};

}  // namespace conveyor
