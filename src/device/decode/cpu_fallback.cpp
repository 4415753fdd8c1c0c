#include "src/device/decode/cpu_fallback.h"

#include <exception>

#include "conveyor/error.h"
#include "conveyor/ops/deferred_crop.h"
#include "src/device/cuda_check.h"

namespace conveyor::cuda {

void decode_on_cpu(const Batch& batch, std::span<const CpuFallback> which, std::uint8_t* pixels,
                   cudaStream_t stream, RetainedHostBuffer& staging, DeviceDecodeOutcome& outcome) {
  constexpr const char* kContext = "DeviceFeeder (CPU fallback decode)";
  const ImageShape shape = batch.sample_shape();
  const std::size_t bytes = shape.bytes();
  std::byte* const staged = staging.reserve(which.size() * bytes);
  for (std::size_t n = 0; n < which.size(); ++n) {
    const std::size_t i = which[n].sample;
    std::uint8_t* slot = pixels + i * bytes;
    auto* host = reinterpret_cast<std::uint8_t*>(staged) + n * bytes;
    std::string failure;
    try {
      const std::optional<ops::DeferredCrop> crop = ops::read_deferred_crop(batch.deferred_descriptor(i));
      if (!crop) throw InvalidArgument("the descriptor was not left by decode_random_resized_crop");
      ops::decode_deferred_crop(batch.deferred_bytes(i), *crop, ImageView(host, shape));
    } catch (const std::exception& error) {
      failure = error.what();
    }
    if (failure.empty()) {
      CONVEYOR_CUDA(cudaMemcpyAsync(slot, host, bytes, cudaMemcpyHostToDevice, stream), kContext);
      ++outcome.cpu;
      outcome.fallback_reasons.push_back(which[n].reason);
    } else {
      // A batch cannot shrink once made: the slot gets zeros and the caller decides (fail or count).
      CONVEYOR_CUDA(cudaMemsetAsync(slot, 0, bytes, stream), kContext);
      outcome.failed.emplace_back(i, which[n].reason + "; on the CPU: " + failure);
    }
  }
}

}  // namespace conveyor::cuda
