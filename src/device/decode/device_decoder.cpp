#include "src/device/decode/device_decoder.h"

#include <span>
#include <string>

#include "conveyor/error.h"
#include "conveyor/ops/deferred_crop.h"
#include "conveyor/ops/random_resized_crop.h"
#include "src/core/phase_timeline.h"
#include "src/device/cuda_check.h"
#include "src/device/decode/cpu_fallback.h"
#include "src/device/decode/warmup_jpegs.h"

namespace conveyor::cuda {
namespace {

constexpr const char* kGpuDecodeContext = "DeviceFeeder (GPU decode)";

// "<head> hardware 254 software 2 ...": what a warm-up decoded by path, for logs.
std::string warmup_line(std::string head, const std::size_t (&paths)[5]) {
  for (std::size_t p = 0; p < 5; ++p) {
    if (paths[p] == 0) continue;
    head += ' ';
    head += to_string(static_cast<NvjpegPath>(p));
    head += ' ';
    head += std::to_string(paths[p]);
  }
  return head;
}

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
  if (channels != 1 && turn_ % 2 == 1) {
    if (NvjpegBatchDecoder* const second = second_rgb()) return *second;
    return *decoders_[1][0];  // the second is not there yet (or it failed): the first decodes alone
  }
  std::unique_ptr<NvjpegBatchDecoder>& decoder = decoders_[channels == 1 ? 0 : 1][turn_ % 2];
  if (!decoder) decoder = make_decoder(channels);
  return *decoder;
}

NvjpegBatchDecoder* DeviceDecoder::second_rgb() {
  if (second_coming_.load(std::memory_order_acquire)) {
    std::lock_guard lock(handover_mutex_);
    if (!handed_over_) return nullptr;
    decoders_[1][1] = std::move(handed_over_);
    second_coming_.store(false, std::memory_order_relaxed);
  }
  if (!decoders_[1][1]) decoders_[1][1] = make_decoder(3);
  return decoders_[1][1].get();
}

std::unique_ptr<NvjpegBatchDecoder> DeviceDecoder::make_decoder(int channels) const {
  NvjpegDecoderOptions options;
  options.device = device_;
  options.hardware = options_.hardware;
  options.hardware_pipelining = options_.hardware_pipelining;
  options.hardware_pool = options_.hardware_pool;
  options.blocks_per_image = blocks_per_image_;
  options.roi = options_.roi;
  options.software_beside_hardware = options_.gpu_hybrid;
  options.color = channels == 1 ? ops::ColorMode::gray : ops::ColorMode::rgb;
  return std::make_unique<NvjpegBatchDecoder>(library_, *pool_, options);
}

const std::string& DeviceDecoder::setup_phases() const noexcept { return decoders_[1][0]->setup_phases(); }

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
    NvjpegBatchDecoder* const second =
        shape.channels == 3 && options_.decode_threads > 1 && requests_.size() > 1 ? second_rgb() : nullptr;
    std::vector<NvjpegOutcome> results;
    if (second != nullptr) {
      results = decode_in_halves(*decoders_[1][0], *second, slots, stream, outcome.nvjpeg);
    } else {
      NvjpegBatchDecoder& decoder = decoder_for(shape.channels);
      const NvjpegHostTimes before = decoder.host_times();
      results = decoder.decode(requests_, slots, stream);
      outcome.nvjpeg = decoder.host_times() - before;
      ++turn_;
    }
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

std::vector<NvjpegOutcome> DeviceDecoder::decode_in_halves(NvjpegBatchDecoder& first,
                                                           NvjpegBatchDecoder& second,
                                                           const DeviceSlots& slots, cudaStream_t stream,
                                                           NvjpegHostTimes& times) {
  if (!helper_) {
    DeviceGuard guard(device_);
    helper_.emplace(device_);
    helper_stream_.emplace();
    halves_start_.emplace();
    second_half_done_.emplace();
  }
  // The second half goes in on a stream of its own that starts where `stream` stands now: submitted on the
  // same stream from two threads, the two halves' GPU work could end up ordered one after the other.
  halves_start_->record(stream);
  CONVEYOR_CUDA(cudaStreamWaitEvent(helper_stream_->get(), halves_start_->get(), 0), kGpuDecodeContext);
  const std::span<const NvjpegRequest> all(requests_);
  const std::size_t half = all.size() / 2;
  const NvjpegHostTimes first_before = first.host_times();
  const NvjpegHostTimes second_before = second.host_times();
  std::vector<NvjpegOutcome> later;
  helper_->start([&] { later = second.decode(all.subspan(half), slots, helper_stream_->get()); });
  std::vector<NvjpegOutcome> results;
  try {
    results = first.decode(all.first(half), slots, stream);
  } catch (...) {
    try {
      helper_->wait();  // the job reads this frame's locals
    } catch (...) {
      // The first half's error is the one to report.
    }
    throw;
  }
  helper_->wait();
  second_half_done_->record(helper_stream_->get());
  CONVEYOR_CUDA(cudaStreamWaitEvent(stream, second_half_done_->get(), 0), kGpuDecodeContext);
  times = (first.host_times() - first_before);
  times += second.host_times() - second_before;
  results.insert(results.end(), later.begin(), later.end());
  return results;
}

void DeviceDecoder::warm(NvjpegBatchDecoder& decoder, const std::vector<WarmupJpeg>& jpegs,
                         std::size_t images, ImageShape shape, std::uint8_t* pixels, cudaStream_t stream,
                         std::size_t (&paths)[5]) const {
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
  decoder.prepare(images, jpegs[0].width, jpegs[0].height);
  for (const NvjpegOutcome& outcome : decoder.decode(requests, slots, stream))
    ++paths[static_cast<std::size_t>(outcome.path)];
}

std::string DeviceDecoder::warm_up(std::size_t images, ImageShape shape, std::uint8_t* pixels,
                                   cudaStream_t stream) {
  if (images == 0 || shape.channels != 3)
    return "no warm-up (" + std::to_string(shape.channels) + " channels)";
  const std::vector<WarmupJpeg> jpegs = warmup_jpegs();
  std::size_t paths[5] = {};
  for (std::size_t turn = 0; turn < 2; ++turn, ++turn_)
    warm(decoder_for(3), jpegs, images, shape, pixels, stream, paths);
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), kGpuDecodeContext);
  return warmup_line("warm-up: 2 decoders x " + std::to_string(images) + " synthetic JPEGs:", paths);
}

std::string DeviceDecoder::warm_up_first(std::size_t images, ImageShape shape, std::uint8_t* pixels,
                                         cudaStream_t stream) {
  if (images == 0 || shape.channels != 3)
    return "no warm-up (" + std::to_string(shape.channels) + " channels)";
  second_coming_.store(true, std::memory_order_release);
  std::size_t paths[5] = {};
  warm(*decoders_[1][0], warmup_jpegs(), images, shape, pixels, stream, paths);
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), kGpuDecodeContext);
  return warmup_line("warm-up: the first decoder x " + std::to_string(images) + " synthetic JPEGs:", paths);
}

DeviceDecoder::SecondDecoder DeviceDecoder::make_second(std::size_t images, ImageShape shape,
                                                        std::uint8_t* pixels, cudaStream_t stream) {
  SecondDecoder out;
  try {
    detail::PhaseTimeline timeline;
    std::unique_ptr<NvjpegBatchDecoder> second = make_decoder(3);
    timeline.done("decoder", second->setup_phases());
    std::size_t paths[5] = {};
    warm(*second, warmup_jpegs(), images, shape, pixels, stream, paths);
    CONVEYOR_CUDA(cudaStreamSynchronize(stream), kGpuDecodeContext);
    timeline.done("warm-up");
    out.warmup = warmup_line("the second decoder x " + std::to_string(images) + " synthetic JPEGs:", paths);
    {
      std::lock_guard lock(handover_mutex_);
      handed_over_ = std::move(second);
    }
    out.made = true;
    out.phases = timeline.line();
  } catch (const std::exception& error) {
    out.phases =
        std::string("the second decoder could not be made (") + error.what() + "): the first decodes alone";
  }
  return out;
}

}  // namespace conveyor::cuda
