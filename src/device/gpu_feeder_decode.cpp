// GpuFeeder's hybrid decoding: how its GPU decoder comes ready (made by feed() first, or at once behind the
// CPU workers on a startup thread: decode/decoder_startup.h), where its split starts (remembered from an
// earlier run: decode/split_memory.h) and the decoding of a batch's deferred samples. The rest of the
// feeder (the ring, copies, augmentation, the returner) is in gpu_feeder.cpp.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>

#include "conveyor/error.h"
#include "conveyor/progress_watch.h"
#include "src/core/seconds_since.h"
#include "src/core/user_cache_folder.h"
#include "src/device/cuda_check.h"
#include "src/device/decode/cpu_fallback.h"
#include "src/device/gpu_feeder.h"
#include "src/device/nvjpeg/nvjpeg_library.h"
#include "src/memory/batch_pool.h"

namespace conveyor::detail {
namespace {

using Clock = std::chrono::steady_clock;

// What the split memory's file is for: the GPU model and size, which GPU of the host (each rank of a host
// settles where its own cores and its own step put it), the driver, nvJPEG.
std::string split_environment(int device, const std::string& nvjpeg_version) {
  cudaDeviceProp props{};
  int driver = 0;
  CONVEYOR_CUDA(cudaGetDeviceProperties(&props, device), "DeviceFeeder (split memory)");
  CONVEYOR_CUDA(cudaDriverGetVersion(&driver), "DeviceFeeder (split memory)");
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) cudaGetLastError();
  return std::string(props.name) + " " + std::to_string(props.multiProcessorCount) + "sm pci " + bus +
         " driver" + std::to_string(driver) + " nvjpeg" + nvjpeg_version;
}

// What else moves the balance: the pipeline's threads, the batch, the data set (its size and its first and
// last paths, hashed) and what the caller names (DeviceDecode::memory_key).
std::string split_key(const BatchedDataset& dataset, int threads, const std::string& memory_key) {
  const ImageShape shape = dataset.sample_shape().value_or(ImageShape{});
  const Dataset& samples = dataset.samples();
  const std::size_t n = samples.source_size();
  std::size_t data = std::hash<std::size_t>{}(n);
  try {
    if (n > 0) data ^= std::hash<std::string>{}(samples.source_path(0) + "\n" + samples.source_path(n - 1));
  } catch (const Error&) {
    // A source without paths (a stream): its size stands for it.
  }
  char hex[24];
  std::snprintf(hex, sizeof hex, "%016zx", data);
  return "threads " + std::to_string(threads) + " batch " + std::to_string(dataset.batch_size()) + " shape " +
         std::to_string(shape.height) + "x" + std::to_string(shape.width) + "x" +
         std::to_string(shape.channels) + " data " + std::to_string(n) + ":" + hex + " key " + memory_key;
}

}  // namespace

cuda::DeviceDecoder* GpuFeeder::decoder() const {
  std::lock_guard lock(mutex_);
  return decoder_.get();
}

bool GpuFeeder::ensure_decoder() {
  await_device();
  cuda::DecoderStartup* running = nullptr;
  {
    std::lock_guard lock(mutex_);
    // A startup planned by an earlier feed() that never staged a batch: made here instead.
    if (startup_plan_) {
      startup_plan_.reset();
      decoder_state_ = DecoderState::untried;
    }
    running = startup_.get();  // never destroyed before the feeder
  }
  // A startup thread of an earlier feed() may still be making it: that one is this one's decoder.
  if (running != nullptr) running->wait();
  {
    std::lock_guard lock(mutex_);
    if (decoder_state_ != DecoderState::untried) return decoder_state_ == DecoderState::ready;
  }
  nvjpeg::LoadResult library = nvjpeg::load();
  std::unique_ptr<cuda::DeviceDecoder> made;
  std::string note;
  if (!library) {
    note = library.unavailable + "; every image is decoded on the CPU";
  } else {
    try {
      cuda::DeviceGuard guard(device_);
      made = std::make_unique<cuda::DeviceDecoder>(library.library, *pool_, device_, options_.decode,
                                                   options_.kernel_blocks_per_image);
      note = made->description();
    } catch (const Error& error) {
      note =
          std::string("nvJPEG cannot decode here: ") + error.what() + "; every image is decoded on the CPU";
    }
  }
  std::lock_guard lock(mutex_);
  stats_.decoder = note;
  decoder_state_ = made ? DecoderState::ready : DecoderState::unavailable;
  decoder_ = std::move(made);
  return static_cast<bool>(decoder_);
}

std::shared_ptr<DeferPolicy> GpuFeeder::start_decoding(const BatchedDataset& dataset,
                                                       const PipelineOptions& pipeline, int threads) {
  const auto fed_at = Clock::now();
  on_error_ = pipeline.on_error;
  trace_ = pipeline.trace;
  decoder_track_ = trace_ ? trace_->track("GPU decoder (feeder thread)") : -1;
  if (!options_.decode.enabled) return nullptr;
  remember_split();  // a feeder fed again: what the last pipeline settled at
  // A deterministic pipeline's output must not depend on timing: its share stays where it was set, from the
  // first sample on.
  const bool adaptive = options_.decode.adapt && !pipeline.deterministic;
  const bool at_once = options_.decode.start_at_once && !pipeline.deterministic;
  {
    std::lock_guard lock(memory_mutex_);
    split_key_ = split_key(dataset, threads, options_.decode.memory_key);
  }
  DecoderState state;
  {
    std::lock_guard lock(mutex_);
    state = decoder_state_;
  }
  if (state == DecoderState::unavailable) return nullptr;
  if (!at_once || state == DecoderState::ready) {
    const bool was_ready = state == DecoderState::ready;
    if (!ensure_decoder()) return nullptr;
    auto split = std::make_shared<DecodeSplit>(options_.decode.share, adaptive, threads);
    const std::string recalled = recall_split(*split);
    std::lock_guard lock(mutex_);
    stats_.split_memory = recalled;
    stats_.startup = was_ready ? "the GPU decoder was ready before feed() (warmup() or an earlier feed())"
                     : pipeline.deterministic
                         ? "made by feed() before the first batch (a deterministic pipeline's split is fixed "
                           "from its first sample)"
                         : "made by feed() before the first batch (DeviceDecode::start_at_once is off)";
    stats_.decoder_ready_seconds = was_ready ? 0 : seconds_since(fed_at);
    stats_.second_decoder_seconds = 0;
    split_ = split;
    return split;
  }
  // At once: the split stays closed, and the CPU workers decode every image, until the decoder is ready.
  auto split = std::make_shared<DecodeSplit>(options_.decode.share, adaptive, threads, /*open=*/false);
  {
    std::lock_guard lock(mutex_);
    split_ = split;
    stats_.startup = "at once: the CPU decodes every image until the GPU decoder is ready";
    stats_.split_memory = "not recalled yet: the split recalls an earlier run's share when it opens";
    stats_.decoder_ready_seconds = 0;
    stats_.second_decoder_seconds = 0;
    if (decoder_state_ == DecoderState::starting) return split;  // an earlier feed()'s startup opens it
    decoder_state_ = DecoderState::starting;
    stats_.decoder = "nvJPEG coming ready on a startup thread (the CPU decodes every image meanwhile)";
  }
  cuda::DecoderPlan plan;
  // Its pool is the feeder's, set when the startup starts (the context may not be there yet).
  plan.device = device_;
  plan.options = options_.decode;
  plan.blocks_per_image = options_.kernel_blocks_per_image;
  if (const std::optional<ImageShape> shape = dataset.sample_shape(); shape && dataset.batch_size() > 0) {
    plan.images = dataset.batch_size();
    plan.shape = *shape;
    // As many batch buffers as the pipeline keeps ready, holds for the feeder and has in the making.
    plan.host_memory = host_memory_;
    plan.host_block_bytes = BatchPool::buffer_bytes(dataset.batch_size(), *shape);
    plan.host_blocks = dataset.prefetch_depth() + pipeline.held_batches + 2;
  }
  std::lock_guard lock(mutex_);
  startup_plan_ = std::move(plan);  // started by stage() once the first batch is on its way
  fed_at_ = fed_at;
  return split;
}

void GpuFeeder::start_planned_startup() {
  std::optional<cuda::DecoderPlan> plan;
  Clock::time_point fed_at;
  {
    std::lock_guard lock(mutex_);
    if (!startup_plan_) return;
    plan = std::move(startup_plan_);
    startup_plan_.reset();
    fed_at = fed_at_;
  }
  plan->pool = pool_;  // stage() calls this: the feeder's device side is set up
  auto startup = std::make_unique<cuda::DecoderStartup>(
      std::move(*plan),
      [this, fed_at](cuda::ReadyDecoder made) { on_decoder_ready(std::move(made), fed_at); },
      [this, fed_at](cuda::DeviceDecoder::SecondDecoder made) {
        on_second_decoder(std::move(made), fed_at);
      });
  std::unique_ptr<cuda::DecoderStartup> earlier;  // none in practice; joined outside the lock if there were
  {
    std::lock_guard lock(mutex_);
    earlier = std::exchange(startup_, std::move(startup));
  }
}

void GpuFeeder::on_decoder_ready(cuda::ReadyDecoder made, Clock::time_point fed_at) noexcept {
  try {
    std::shared_ptr<DecodeSplit> split;
    {
      std::lock_guard lock(mutex_);
      stats_.decoder = made.note;
      if (!made.warmup.empty()) stats_.warmup = made.warmup;
      decoder_state_ = made.decoder ? DecoderState::ready : DecoderState::unavailable;
      decoder_ = std::move(made.decoder);
      if (!decoder_) {
        stats_.startup = "at once, but the GPU decoder could not be made: the CPU decodes every image";
        return;
      }
      split = split_;
    }
    if (!split) return;
    const std::string recalled = recall_split(*split);
    split->open();
    const double after = seconds_since(fed_at);
    if (trace_ && decoder_track_ >= 0)
      trace_->complete(decoder_track_, "GPU decoder coming ready (the CPU decodes everything)", fed_at,
                       Clock::now());
    char line[160];
    std::snprintf(line, sizeof line,
                  "at once: the CPU decoded every image for %.3f s while the GPU decoder came ready in %.3f s",
                  after, made.seconds);
    char opened[48];
    std::snprintf(opened, sizeof opened, "; then the split opened at %.3f", split->share());
    std::string startup = line;
    if (!made.phases.empty()) startup += " (" + made.phases + ")";
    startup += opened;
    std::lock_guard lock(mutex_);
    stats_.split_memory = recalled;
    stats_.decoder_ready_seconds = after;
    stats_.startup = std::move(startup);
  } catch (...) {
    // Out of memory for a note: the split stays as it is (closed: the CPU decodes everything).
  }
}

void GpuFeeder::on_second_decoder(cuda::DeviceDecoder::SecondDecoder made,
                                  Clock::time_point fed_at) noexcept {
  try {
    const double after = seconds_since(fed_at);
    char line[96];
    if (made.made)
      std::snprintf(line, sizeof line, "; the second decoder joined at %.3f s (", after);
    else
      std::snprintf(line, sizeof line, "; at %.3f s ", after);
    std::string note = line + made.phases + (made.made ? ")" : "");
    std::lock_guard lock(mutex_);
    stats_.startup += note;
    if (!made.warmup.empty()) stats_.warmup += "; " + made.warmup;
    if (made.made) stats_.second_decoder_seconds = after;
  } catch (...) {
    // Out of memory for a note: the decoder was handed over all the same.
  }
}

std::string GpuFeeder::recall_split(DecodeSplit& split) {
  if (!split.adaptive()) return "the split is fixed (a deterministic pipeline, or DeviceDecode::adapt off)";
  if (!options_.decode.remember_share) return "not remembered (DeviceDecode::remember_share is off)";
  const cuda::DeviceDecoder* const made = decoder();
  if (made == nullptr) return "no GPU decoder";
  try {
    const std::optional<std::filesystem::path> folder =
        detail::user_cache_folder(options_.decode.memory_folder, std::getenv("CONVEYOR_ALGORITHM_CACHE"),
                                  std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
    if (!folder) return "no remembered split (no cache folder)";
    std::lock_guard lock(memory_mutex_);
    split_memory_.emplace(*folder, split_environment(device_, made->nvjpeg_version()));
    if (const std::optional<SplitRecord> record = split_memory_->recall(split_key_)) {
      split.start_from(*record);
      return "started from the remembered share " + std::to_string(record->share) + " (" +
             split_memory_->file().string() + ")";
    }
    return "no remembered split";
  } catch (const std::exception& error) {
    std::lock_guard lock(memory_mutex_);
    split_memory_.reset();
    return std::string("split memory unusable: ") + error.what();
  }
}

void GpuFeeder::remember_split() noexcept {
  try {
    std::shared_ptr<DecodeSplit> split;
    {
      std::lock_guard lock(mutex_);
      split = split_;
    }
    if (!split || !split->adaptive()) return;
    const SplitRecord settled = split->settled();
    // A run too short to settle would teach the next one a share it never reached.
    constexpr std::uint64_t kEnoughBatches = 16;
    if (settled.batches < kEnoughBatches) return;
    std::string kept;
    {
      std::lock_guard lock(memory_mutex_);
      if (!split_memory_) return;
      const std::string problem = split_memory_->keep(split_key_, settled);
      kept = problem.empty() ? "kept in " + split_memory_->file().string() : problem;
    }
    std::lock_guard lock(mutex_);
    stats_.split_memory = kept;
  } catch (...) {
    // Remembering is a favour to the next run: never a reason for this one to fail.
  }
}

double GpuFeeder::decode_deferred(Slot& slot, const Batch& batch, std::uint8_t* device_pixels,
                                  const DecodeSplit* split) {
  const cudaStream_t stream = copy_->get();
  const auto start = Clock::now();
  cuda::DeviceDecodeOutcome outcome;
  if (cuda::DeviceDecoder* const made = decoder()) {
    outcome = made->decode(batch, device_pixels, stream, *slot.fallback);
  } else {
    // Deferred without a GPU decoder (a policy set by hand, or nvJPEG gone): the CPU makes them all.
    std::vector<cuda::CpuFallback> all;
    for (std::size_t i = 0; i < batch.size(); ++i)
      if (batch.samples()[i].deferred) all.push_back({i, "no GPU decoder"});
    outcome.deferred = all.size();
    cuda::decode_on_cpu(batch, all, device_pixels, stream, *slot.fallback, outcome);
  }
  const double host_seconds = seconds_since(start);
  if (trace_ && decoder_track_ >= 0) {
    const std::string what =
        "decode " + std::to_string(outcome.gpu) + " GPU + " + std::to_string(outcome.cpu) + " CPU" +
        (outcome.failed.empty() ? "" : ", " + std::to_string(outcome.failed.size()) + " failed");
    trace_->complete(decoder_track_, what, start, Clock::now());
    if (split) trace_->counter("GPU decode share", TraceRecorder::now(), split->share());
  }
  {
    std::lock_guard lock(mutex_);
    decoded_.gpu += outcome.gpu;
    decoded_.cpu += outcome.cpu;
    decoded_.failures += outcome.failed.size();
    decoded_.host_seconds += host_seconds;
    decoded_.nvjpeg += outcome.nvjpeg;
    for (std::size_t p = 0; p < outcome.paths.size(); ++p) decoded_.paths[p] += outcome.paths[p];
    for (const std::string& reason : outcome.fallback_reasons) ++decoded_.reasons[reason];
    for (const auto& [sample, reason] : outcome.failed) ++decoded_.reasons["failed: " + reason];
  }
  if (!outcome.failed.empty() && on_error_ == OnError::fail) {
    const auto& [sample, reason] = outcome.failed.front();
    const SampleInfo& info = batch.samples()[sample];
    throw PipelineError("sample " + std::to_string(info.index) + " of epoch " + std::to_string(info.epoch) +
                            " (deferred to the GPU)",
                        "device decode", reason);
  }
  return host_seconds;
}

}  // namespace conveyor::detail
