// random_invert's GPU twin: the coins are drawn on the CPU from each sample's seed (draw_invert, the op's own
// draw), passed to the kernel by value as a bit set (no buffer to allocate or copy), and the kernel inverts
// the chosen images in place on the feeder's stream.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <any>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "conveyor/random.h"
#include "random_invert.h"

namespace gpu_twin_example {
namespace {

// One launch covers up to this many images: their coins fit in the kernel's parameters.
constexpr std::size_t kImagesPerLaunch = 1024;

struct Coins {
  std::uint32_t bits[kImagesPerLaunch / 32];
};

__global__ void invert_kernel(std::uint8_t* pixels, std::size_t image_bytes, Coins coins) {
  const unsigned image = blockIdx.y;
  if (((coins.bits[image / 32] >> (image % 32)) & 1u) == 0) return;
  std::uint8_t* data = pixels + image * image_bytes;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < image_bytes; i += gridDim.x * blockDim.x)
    data[i] = static_cast<std::uint8_t>(255 - data[i]);
}

class RandomInvertTwin final : public conveyor::DevicePixelOp {
 public:
  RandomInvertTwin(double p, std::uint64_t stream) : p_(p), stream_(stream) {}

  void run(const conveyor::DevicePixels& pixels, std::span<const conveyor::SampleInfo> samples,
           CUstream_st* stream) override {
    const std::size_t image_bytes = pixels.shape.bytes();
    for (std::size_t first = 0; first < pixels.count; first += kImagesPerLaunch) {
      const std::size_t count = std::min(kImagesPerLaunch, pixels.count - first);
      Coins coins{};
      for (std::size_t i = 0; i < count; ++i)
        if (draw_invert(p_, samples[first + i].seed, stream_)) coins.bits[i / 32] |= 1u << (i % 32);
      const dim3 grid(static_cast<unsigned>(std::min<std::size_t>((image_bytes + 255) / 256, 64)),
                      static_cast<unsigned>(count));
      invert_kernel<<<grid, 256, 0, stream>>>(pixels.data + first * image_bytes, image_bytes, coins);
      if (const cudaError_t error = cudaGetLastError(); error != cudaSuccess)
        throw std::runtime_error(std::string("random_invert's twin: ") + cudaGetErrorString(error));
    }
  }

 private:
  double p_;
  std::uint64_t stream_;
};

}  // namespace

conveyor::GpuTwin random_invert_twin() {
  return conveyor::pixel_twin([](const conveyor::SampleOp& op, std::uint64_t position, int) {
    const auto& spec = std::any_cast<const RandomInvertSpec&>(op.spec);
    return std::make_unique<RandomInvertTwin>(spec.p, conveyor::op_stream(kInvertStream, position));
  });
}

}  // namespace gpu_twin_example
