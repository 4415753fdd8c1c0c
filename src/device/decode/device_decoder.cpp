#include "src/device/decode/device_decoder.h"

#include <algorithm>
#include <future>
#include <span>
#include <string>

#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/error.h"
#include "conveyor/ops/deferred_crop.h"
#include "src/device/cuda_check.h"
#include "src/device/decode/cpu_fallback.h"

namespace conveyor::cuda {
namespace {

constexpr const char* kContext = "DeviceFeeder (GPU decode)";

std::string reason_of(const NvjpegOutcome& outcome) {
  std::string reason = std::string("nvjpeg: ") + to_string(outcome.fallback);
  if (outcome.status != nvjpeg::Status::success)
    reason += std::string(" ") + nvjpeg::to_string(outcome.status);
  return reason;
}

}  // namespace

DeviceDecoder::DeviceDecoder(std::shared_ptr<const nvjpeg::Library> library, DeviceMemoryPool& pool,
                             int device, const DeviceDecode& options, int stream_priority)
    : library_(std::move(library)),
      pool_(&pool),
      device_(device),
      options_(options),
      stream_priority_(stream_priority),
      pinned_(pinned_host_memory()) {
  if (!library_) throw InvalidArgument(std::string(kContext) + ": no nvJPEG library");
  if (options_.lanes < 1 || options_.lanes > 8)
    throw InvalidArgument(std::string(kContext) + ": DeviceDecode::lanes is " + std::to_string(options_.lanes) +
                          ", not 1 to 8");
  for (auto& decoders : decoders_) decoders.resize(2 * static_cast<std::size_t>(options_.lanes));
  // Set up nvJPEG now, so that a machine where it cannot work says so when feeding starts.
  description_ = decoder_for(3, 0).description();
  if (options_.lanes > 1) description_ += ", " + std::to_string(options_.lanes) + " lanes";
}

NvjpegBatchDecoder& DeviceDecoder::decoder_for(int channels, std::size_t lane) {
  std::unique_ptr<NvjpegBatchDecoder>& decoder = decoders_[channels == 1 ? 0 : 1][2 * lane + turn_ % 2];
  if (!decoder) {
    NvjpegDecoderOptions options;
    options.device = device_;
    options.hardware = options_.hardware;
    options.roi = options_.roi;
    options.color = channels == 1 ? ops::ColorMode::gray : ops::ColorMode::rgb;
    options.stream_priority = stream_priority_;
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
    // Lane l takes requests [n l / lanes, n (l + 1) / lanes); its decoders are made here, before any
    // lane's thread starts.
    const std::size_t lanes = std::min(static_cast<std::size_t>(options_.lanes), requests_.size());
    std::vector<NvjpegBatchDecoder*> decoders(lanes);
    for (std::size_t lane = 0; lane < lanes; ++lane) decoders[lane] = &decoder_for(shape.channels, lane);
    std::vector<std::vector<NvjpegOutcome>> results(lanes);
    std::vector<NvjpegHostTimes> times(lanes);
    const auto decode_lane = [&](std::size_t lane) {
      const std::size_t begin = requests_.size() * lane / lanes;
      const std::size_t end = requests_.size() * (lane + 1) / lanes;
      const NvjpegHostTimes before = decoders[lane]->host_times();
      results[lane] =
          decoders[lane]->decode(std::span(requests_).subspan(begin, end - begin), slots, stream);
      times[lane] = decoders[lane]->host_times() - before;
    };
    {
      // A future of std::async waits for its thread when destroyed: no lane outlives this scope, also when
      // one throws.
      std::vector<std::future<void>> others;
      for (std::size_t lane = 1; lane < lanes; ++lane)
        others.push_back(std::async(std::launch::async, decode_lane, lane));
      decode_lane(0);
      for (std::future<void>& other : others) other.get();
    }
    ++turn_;
    std::size_t k = 0;  // the request's index: the lanes' results follow one another
    for (std::size_t lane = 0; lane < lanes; ++lane) {
      outcome.nvjpeg += times[lane];
      for (const NvjpegOutcome& result : results[lane]) {
        if (result.path != NvjpegPath::fallback) {
          ++outcome.gpu;
        } else {
          on_cpu.push_back({which_[k], reason_of(result)});
        }
        ++k;
      }
    }
  }
  if (!on_cpu.empty()) decode_on_cpu(batch, on_cpu, pixels, stream, staging, pinned_, outcome);
  return outcome;
}

}  // namespace conveyor::cuda
