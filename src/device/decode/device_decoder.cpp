#include "src/device/decode/device_decoder.h"

#include <string>

#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/error.h"
#include "conveyor/ops/deferred_crop.h"
#include "src/device/cuda_check.h"
#include "src/device/decode/cpu_fallback.h"

namespace conveyor::cuda {
namespace {

constexpr const char* kGpuDecodeContext = "DeviceFeeder (GPU decode)";

std::string reason_of(const NvjpegOutcome& outcome) {
  std::string reason = std::string("nvjpeg: ") + to_string(outcome.fallback);
  if (outcome.status != nvjpeg::Status::success)
    reason += std::string(" ") + nvjpeg::to_string(outcome.status);
  return reason;
}

}  // namespace

DeviceDecoder::DeviceDecoder(std::shared_ptr<const nvjpeg::Library> library, DeviceMemoryPool& pool,
                             int device, const DeviceDecode& options)
    : library_(std::move(library)),
      pool_(&pool),
      device_(device),
      options_(options),
      pinned_(pinned_host_memory()) {
  if (!library_) throw InvalidArgument(std::string(kGpuDecodeContext) + ": no nvJPEG library");
  // Set up nvJPEG now, so that a machine where it cannot work says so when feeding starts.
  description_ = decoder_for(3).description();
}

NvjpegBatchDecoder& DeviceDecoder::decoder_for(int channels) {
  std::unique_ptr<NvjpegBatchDecoder>& decoder = decoders_[channels == 1 ? 0 : 1][turn_ % 2];
  if (!decoder) {
    NvjpegDecoderOptions options;
    options.device = device_;
    options.hardware = options_.hardware;
    options.hardware_pipelining = options_.hardware_pipelining;
    options.roi = options_.roi;
    options.color = channels == 1 ? ops::ColorMode::gray : ops::ColorMode::rgb;
    decoder = std::make_unique<NvjpegBatchDecoder>(library_, *pool_, options);
  }
  return *decoder;
}

DeviceDecodeOutcome DeviceDecoder::decode(const Batch& batch, std::uint8_t* pixels, cudaStream_t stream,
                                          detail::HostAllocation& staging) {
  DeviceDecodeOutcome outcome;
  const ImageShape shape = batch.sample_shape();
  requests_.clear();
  which_.clear();
  std::vector<CpuFallback> on_cpu;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!batch.samples()[i].deferred) continue;
    ++outcome.deferred;
    const std::optional<ops::DeferredCrop> crop = ops::read_deferred_crop(batch.deferred_descriptor(i));
    if (!crop || crop->output != shape) {
      // Not something this decoder (or the CPU fallback) knows how to make: another op deferred it, or
      // for another slot shape. The CPU fallback reports it as a failure.
      on_cpu.push_back({i, "unknown descriptor"});
      continue;
    }
    requests_.push_back({batch.deferred_bytes(i), crop->window, static_cast<std::uint32_t>(i)});
    which_.push_back(i);
  }
  if (!requests_.empty()) {
    const DeviceSlots slots{pixels, batch.size(), shape, shape.bytes(),
                            static_cast<std::size_t>(shape.width) * static_cast<std::size_t>(shape.channels)};
    NvjpegBatchDecoder& decoder = decoder_for(shape.channels);
    const NvjpegHostTimes before = decoder.host_times();
    const std::vector<NvjpegOutcome> results = decoder.decode(requests_, slots, stream);
    outcome.nvjpeg = decoder.host_times() - before;
    ++turn_;
    for (std::size_t k = 0; k < results.size(); ++k) {
      if (results[k].path != NvjpegPath::fallback) {
        ++outcome.gpu;
      } else {
        on_cpu.push_back({which_[k], reason_of(results[k])});
      }
    }
  }
  if (!on_cpu.empty()) decode_on_cpu(batch, on_cpu, pixels, stream, staging, pinned_, outcome);
  return outcome;
}

}  // namespace conveyor::cuda
