#include "src/device/decode/device_decoder.h"

#include <string>

#include "conveyor/error.h"
#include "conveyor/ops/deferred_crop.h"
#include "conveyor/ops/random_resized_crop.h"
#include "src/device/cuda_check.h"
#include "src/device/decode/cpu_fallback.h"
#include "src/device/decode/warmup_jpegs.h"

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
                             int device, const DeviceDecode& options, int blocks_per_image)
    : library_(std::move(library)),
      pool_(&pool),
      device_(device),
      options_(options),
      blocks_per_image_(blocks_per_image) {
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
    options.hardware_pool = options_.hardware_pool;
    options.blocks_per_image = blocks_per_image_;
    options.roi = options_.roi;
    options.software_beside_hardware = options_.gpu_hybrid;
    options.color = channels == 1 ? ops::ColorMode::gray : ops::ColorMode::rgb;
    decoder = std::make_unique<NvjpegBatchDecoder>(library_, *pool_, options);
  }
  return *decoder;
}

DeviceDecodeOutcome DeviceDecoder::decode(const Batch& batch, std::uint8_t* pixels, cudaStream_t stream,
                                          RetainedHostBuffer& staging) {
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
        ++outcome.paths[static_cast<std::size_t>(results[k].path)];
      } else {
        on_cpu.push_back({which_[k], reason_of(results[k])});
      }
    }
  }
  if (!on_cpu.empty()) decode_on_cpu(batch, on_cpu, pixels, stream, staging, outcome);
  return outcome;
}

std::string DeviceDecoder::warm_up(std::size_t images, ImageShape shape, std::uint8_t* pixels,
                                   cudaStream_t stream) {
  if (images == 0 || shape.channels != 3)
    return "no warm-up (" + std::to_string(shape.channels) + " channels)";
  const std::vector<WarmupJpeg> jpegs = warmup_jpegs();
  // Every slot gets a picture: the last slots take the forms the engines refuse (one each, when the batch
  // has room for them and a baseline one), the rest the baseline one, each with its own crop window as the
  // op would draw it.
  const std::size_t refused = jpegs.size() - 1;
  std::vector<NvjpegRequest> requests(images);
  for (std::size_t i = 0; i < images; ++i) {
    const std::size_t form = images > refused && i >= images - refused ? 1 + i - (images - refused) : 0;
    const WarmupJpeg& jpeg = jpegs[form];
    const ops::Rect window = ops::draw_random_resized_crop_window(jpeg.height, jpeg.width, {}, i, 0);
    requests[i] = {jpeg.bytes, window, static_cast<std::uint32_t>(i)};
  }
  const DeviceSlots slots{pixels, images, shape, shape.bytes(),
                          static_cast<std::size_t>(shape.width) * static_cast<std::size_t>(shape.channels)};
  std::size_t paths[5] = {};
  for (std::size_t turn = 0; turn < 2; ++turn, ++turn_) {
    NvjpegBatchDecoder& decoder = decoder_for(3);
    decoder.prepare(images, jpegs[0].width, jpegs[0].height);
    for (const NvjpegOutcome& outcome : decoder.decode(requests, slots, stream))
      ++paths[static_cast<std::size_t>(outcome.path)];
  }
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), kGpuDecodeContext);
  std::string line = "warm-up: 2 decoders x " + std::to_string(images) + " synthetic JPEGs:";
  for (std::size_t p = 0; p < 5; ++p) {
    if (paths[p] == 0) continue;
    line += ' ';
    line += to_string(static_cast<NvjpegPath>(p));
    line += ' ';
    line += std::to_string(paths[p]);
  }
  return line;
}

}  // namespace conveyor::cuda
