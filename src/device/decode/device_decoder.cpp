#include "src/device/decode/device_decoder.h"

#include <algorithm>
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
                             int device, const DeviceDecode& options)
    : library_(std::move(library)),
      pool_(&pool),
      device_(device),
      options_(options),
      pinned_(pinned_host_memory()),
      threads_(static_cast<std::size_t>(std::clamp(options.host_threads, 1, 8))) {
  if (!library_) throw InvalidArgument(std::string(kContext) + ": no nvJPEG library");
  lanes_.reserve(threads_.size());
  for (std::size_t k = 0; k < threads_.size(); ++k) lanes_.emplace_back();
  forked_.emplace();
  // Set up nvJPEG now, so that a machine where it cannot work says so when feeding starts.
  description_ = decoder_for(lanes_[0], 3).description();
  if (lanes_.size() > 1) description_ += ", " + std::to_string(lanes_.size()) + " host threads";
}

NvjpegBatchDecoder& DeviceDecoder::decoder_for(Lane& lane, int channels) {
  std::unique_ptr<NvjpegBatchDecoder>& decoder = lane.decoders[channels == 1 ? 0 : 1][lane.turn % 2];
  if (!decoder) {
    NvjpegDecoderOptions options;
    options.device = device_;
    options.hardware = options_.hardware;
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
    std::vector<NvjpegOutcome> results(requests_.size());
    // Lane k takes requests [n k / lanes, n (k + 1) / lanes): contiguous parts, disjoint slots. Each
    // lane's stream starts after the work the caller queued (the copy of the batch's other pixels) and
    // the caller's stream continues after every lane's part.
    const std::size_t n = requests_.size(), count = lanes_.size();
    forked_->record(stream);
    for (Lane& lane : lanes_)
      CONVEYOR_CUDA(cudaStreamWaitEvent(lane.stream.get(), forked_->get(), 0), kContext);
    const auto join = [&] {
      for (Lane& lane : lanes_) {
        lane.joined.record(lane.stream.get());
        CONVEYOR_CUDA(cudaStreamWaitEvent(stream, lane.joined.get(), 0), kContext);
      }
    };
    try {
      threads_.run([&](std::size_t k) {
        const std::size_t begin = n * k / count, end = n * (k + 1) / count;
        if (begin == end) return;
        Lane& lane = lanes_[k];
        DeviceGuard guard(device_);  // the lane threads start on no device in particular
        const std::vector<NvjpegOutcome> part =
            decoder_for(lane, shape.channels)
                .decode(std::span(requests_).subspan(begin, end - begin), slots, lane.stream.get());
        ++lane.turn;
        std::copy(part.begin(), part.end(), results.begin() + static_cast<std::ptrdiff_t>(begin));
      });
    } catch (...) {
      join();  // what the other lanes queued must finish before the slots are reused
      throw;
    }
    join();
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
