#include "src/device/decode/decoder_startup.h"

#include <exception>
#include <utility>

#include "src/core/phase_timeline.h"
#include "src/device/cuda_handles.h"
#include "src/device/nvjpeg/nvjpeg_library.h"

namespace conveyor::cuda {

namespace {

// A stream and a batch of device memory for a warm-up, from the feeder's pool (which keeps the memory when
// it is given back: the ring's buffers come from it later).
struct WarmupScratch {
  Stream stream;
  DeviceBuffer pixels;
  explicit WarmupScratch(const DecoderPlan& plan)
      : pixels(plan.pool->allocate(plan.images * plan.shape.bytes(), stream.get(),
                                   "GPU decoder warm-up batch")) {}
};

bool warms_up(const DecoderPlan& plan) noexcept { return plan.images > 0 && plan.shape.channels == 3; }

}  // namespace

ReadyDecoder make_decoder_ready(const DecoderPlan& plan, const std::atomic<bool>& stop) noexcept {
  detail::PhaseTimeline timeline;
  ReadyDecoder out;
  const auto stopped = [&] {
    if (!stop.load(std::memory_order_relaxed)) return false;
    out.decoder.reset();
    out.note = "stopped before the GPU decoder was ready";
    return true;
  };
  try {
    // This thread's CUDA calls go to the feeder's device (a fresh thread would bind device 0).
    DeviceGuard guard(plan.device);
    nvjpeg::LoadResult library = nvjpeg::load();
    timeline.done("library");
    if (!library) {
      out.note = library.unavailable + "; every image is decoded on the CPU";
      out.phases = timeline.line();
      out.seconds = timeline.seconds();
      return out;
    }
    if (stopped()) return out;
    out.decoder = std::make_unique<DeviceDecoder>(library.library, *plan.pool, plan.device, plan.options,
                                                  plan.blocks_per_image);
    out.note = out.decoder->description();
    timeline.done("decoder", out.decoder->setup_phases());
    if (stopped()) return out;
    // The pipeline makes its first batch buffer itself; these are the ones it would make next, each a
    // cudaHostAlloc of tens of megabytes on its source stage.
    if (plan.host_memory && plan.host_block_bytes > 0) {
      plan.host_memory->fill(plan.host_block_bytes, plan.host_blocks);
      timeline.done("page-locked batch buffers");
    }
    if (stopped()) return out;
    if (warms_up(plan)) {
      WarmupScratch scratch(plan);
      if (plan.options.open_before_second) {
        out.warmup = out.decoder->warm_up_first(plan.images, plan.shape, scratch.pixels.as<std::uint8_t>(),
                                                scratch.stream.get());
        out.second_behind = true;
        timeline.done("warm-up of the first decoder");
      } else {
        out.warmup = out.decoder->warm_up(plan.images, plan.shape, scratch.pixels.as<std::uint8_t>(),
                                          scratch.stream.get());
        timeline.done("warm-up (the second decoder made in it)");
      }
    }
  } catch (const std::exception& error) {
    out.decoder.reset();
    out.second_behind = false;
    out.note = std::string("nvJPEG cannot decode here: ") + error.what() + "; every image is decoded on the CPU";
  } catch (...) {
    out.decoder.reset();
    out.second_behind = false;
    out.note = "nvJPEG cannot decode here (unknown error); every image is decoded on the CPU";
  }
  out.phases = timeline.line();
  out.seconds = timeline.seconds();
  return out;
}

DeviceDecoder::SecondDecoder make_second_decoder(const DecoderPlan& plan, DeviceDecoder& decoder) noexcept {
  try {
    DeviceGuard guard(plan.device);
    WarmupScratch scratch(plan);
    return decoder.make_second(plan.images, plan.shape, scratch.pixels.as<std::uint8_t>(),
                               scratch.stream.get());
  } catch (const std::exception& error) {
    DeviceDecoder::SecondDecoder failed;
    failed.phases =
        std::string("the second decoder could not be made (") + error.what() + "): the first decodes alone";
    return failed;
  } catch (...) {
    DeviceDecoder::SecondDecoder failed;
    failed.phases = "the second decoder could not be made (unknown error): the first decodes alone";
    return failed;
  }
}

DecoderStartup::DecoderStartup(DecoderPlan plan, std::function<void(ReadyDecoder)> ready,
                               std::function<void(DeviceDecoder::SecondDecoder)> second)
    : thread_([this, plan = std::move(plan), ready = std::move(ready), second = std::move(second)] {
        ReadyDecoder made = make_decoder_ready(plan, stop_);
        DeviceDecoder* const alone = made.second_behind ? made.decoder.get() : nullptr;
        if (stop_.load()) return;
        ready(std::move(made));
        if (alone == nullptr || stop_.load()) return;
        DeviceDecoder::SecondDecoder joined = make_second_decoder(plan, *alone);
        if (!stop_.load() && second) second(std::move(joined));
      }) {}

DecoderStartup::~DecoderStartup() {
  stop_.store(true);
  wait();
}

void DecoderStartup::wait() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace conveyor::cuda
