#include "src/device/decode/decoder_startup.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <utility>

#include "src/core/seconds_since.h"
#include "src/device/cuda_handles.h"
#include "src/device/nvjpeg/nvjpeg_library.h"

namespace conveyor::cuda {

ReadyDecoder make_decoder_ready(const DecoderPlan& plan, const std::atomic<bool>& stop) noexcept {
  const auto start = std::chrono::steady_clock::now();
  ReadyDecoder out;
  auto phase_began = start;
  const auto phase_done = [&](const char* name) {  // one "name 0.123 s" more in out.phases
    const auto now = std::chrono::steady_clock::now();
    char part[64];
    std::snprintf(part, sizeof part, "%s%s %.3f s", out.phases.empty() ? "" : ", ", name,
                  std::chrono::duration<double>(now - phase_began).count());
    out.phases += part;
    phase_began = now;
  };
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
    phase_done("library");
    if (!library) {
      out.note = library.unavailable + "; every image is decoded on the CPU";
      out.seconds = detail::seconds_since(start);
      return out;
    }
    if (stopped()) return out;
    out.decoder = std::make_unique<DeviceDecoder>(library.library, *plan.pool, plan.device, plan.options,
                                                  plan.blocks_per_image);
    out.note = out.decoder->description();
    phase_done("decoders");
    if (stopped()) return out;
    // The pipeline makes its first batch buffer itself; these are the ones it would make next, each a
    // cudaHostAlloc of tens of megabytes on its source stage.
    if (plan.host_memory && plan.host_block_bytes > 0) {
      plan.host_memory->fill(plan.host_block_bytes, plan.host_blocks);
      phase_done("page-locked batch buffers");
    }
    if (stopped()) return out;
    if (plan.images > 0 && plan.shape.channels == 3) {
      Stream stream;
      // From the feeder's pool, which keeps it when it is given back: the ring's buffers come from it later.
      DeviceBuffer scratch =
          plan.pool->allocate(plan.images * plan.shape.bytes(), stream.get(), "GPU decoder warm-up batch");
      out.warmup = out.decoder->warm_up(plan.images, plan.shape, scratch.as<std::uint8_t>(), stream.get());
      scratch.reset();
      stream.synchronize();
      phase_done("warm-up");
    }
  } catch (const std::exception& error) {
    out.decoder.reset();
    out.note = std::string("nvJPEG cannot decode here: ") + error.what() + "; every image is decoded on the CPU";
  } catch (...) {
    out.decoder.reset();
    out.note = "nvJPEG cannot decode here (unknown error); every image is decoded on the CPU";
  }
  out.seconds = detail::seconds_since(start);
  return out;
}

DecoderStartup::DecoderStartup(DecoderPlan plan, std::function<void(ReadyDecoder)> ready)
    : thread_([this, plan = std::move(plan), ready = std::move(ready)] {
        ReadyDecoder made = make_decoder_ready(plan, stop_);
        if (!stop_.load()) ready(std::move(made));
      }) {}

DecoderStartup::~DecoderStartup() {
  stop_.store(true);
  wait();
}

void DecoderStartup::wait() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace conveyor::cuda
