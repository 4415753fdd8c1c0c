// The GPU side of DeviceFeeder: a ring of device buffers filled by cudaMemcpyAsync on a copy stream (and
// normalized there when asked), made ready on the consumer stream, and a returner thread that gives each
// pinned batch back to its pool the moment its copy has finished.
//
// Why a thread and not cudaLaunchHostFunc: a host function runs on CUDA's internal thread and must not
// call CUDA, but releasing a Batch runs its pool's deleter, which is not ours to constrain (a pool being
// torn down frees pinned memory with cudaFreeHost). It would also stall the copy stream while it runs.
// Polling the copy's event at the next stage() call would hold every pinned buffer for a whole training
// step instead of for the copy. The returner sleeps in cudaEventSynchronize on a blocking-sync event, so it
// costs no core, and releases each batch on a thread the feeder owns and joins.
//
// Reuse of a slot: when the last hold of a DeviceBatch dies, an event is recorded on its consumer stream
// (after joining every other stream that read the batch: read_on()); the copy stream waits on that event
// before writing the slot again. So neither host thread blocks, and no kernel the consumer enqueued before
// releasing can see the next batch's bytes.
//
// After the copy, on the copy stream (FeederOptions): the batch's deferred samples are decoded
// (decode/device_decoder.h) into their slots, then the augmentation (augment/gpu_augmenter.h, fused with
// normalize) or normalize alone writes images(). The decoder's time on the GPU is measured between two
// events around it and read by the returner, which hands it to the split policy (decode/decode_split.h).
// How the decoder comes ready and where the split starts: gpu_feeder_decode.cpp.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/trace.h"
#include "src/device/augment/gpu_augmenter.h"
#include "src/device/cuda_handles.h"
#include "src/device/decode/decode_split.h"
#include "src/device/decode/decoded_runs.h"
#include "src/device/decode/decoder_startup.h"
#include "src/device/decode/device_decoder.h"
#include "src/device/decode/split_memory.h"
#include "src/device/device_memory.h"
#include "src/device/feeder_backend.h"
#include "src/device/late_locked_memory.h"
#include "src/device/pinned_block_cache.h"
#include "src/device/retained_host_buffer.h"

namespace conveyor::detail {

class GpuFeeder final : public FeederBackend {
 public:
  // shared_pool may be null: the feeder then owns a pool without a limit.
  GpuFeeder(int device, const FeederOptions& options, cuda::DeviceMemoryPool* shared_pool);
  ~GpuFeeder() override;
  GpuFeeder(const GpuFeeder&) = delete;
  GpuFeeder& operator=(const GpuFeeder&) = delete;

  DeviceBatch stage(Batch batch, StageMode mode) override;
  void hand_over(const DeviceBatch& batch) override;
  void synchronize() override;
  FeederStats stats() const override;
  void release(std::size_t slot) noexcept override;
  HeldSlots& slots() noexcept override { return held_; }
  double warmup(const BatchedDataset& dataset) override;
  // The feeder's own page-locked blocks (pinned_block_cache.h): kept between runs, made at warm-up.
  std::shared_ptr<HostMemoryResource> host_memory() override { return host_memory_; }

  // Hybrid decoding for `dataset` run with `pipeline` options: the policy for PipelineOptions::defer, or
  // null (FeederStats::decoder says why) when there is no nvJPEG or it cannot work here. With
  // DeviceDecode::start_at_once in a pipeline that is not deterministic the split is closed and nvJPEG comes
  // ready on a startup thread, which then opens it; otherwise nvJPEG is set up (once) before this returns.
  // An adapting split starts where the last run with the same key settled (DeviceDecode::remember_share).
  // Also takes the pipeline's on_error (what an image neither decoder can decode does) and trace (the "GPU
  // decoder" track).
  std::shared_ptr<DeferPolicy> start_decoding(const BatchedDataset& dataset, const PipelineOptions& pipeline,
                                              int threads);

  // The batches feed() will stage: the set-up thread sizes the ring's device buffers for them once the
  // context is there, off the first batch's way; when the set-up ended before (the context was there), a
  // thread of its own does, before the first batch is staged.
  void expect_batches(std::size_t capacity, ImageShape shape);

  // Where feed() runs the pipeline now (FeederStats::pipeline_cpus).
  void note_pipeline_cpus(std::vector<int> cpus, std::string reason);

  int device() const noexcept { return device_; }
  cudaStream_t consumer_stream() const;
  // Only while no batch is held: batches already handed out keep the stream they were made ready on.
  void set_consumer_stream(cudaStream_t stream);
  // `stream` waits for the batch in `slot` now and is joined before the slot is reused.
  void read_on(std::size_t slot, cudaStream_t stream);
  // The stream a held batch was made ready on.
  cudaStream_t consumer_of(std::size_t slot) const;

 private:
  struct Slot {
    cuda::DeviceBuffer buffer;  // pixels, labels at label_offset, normalized images at images_offset
    std::size_t pixel_capacity = 0, label_offset = 0, images_offset = 0;
    cuda::DeviceBuffer fields;  // the field tensors (conveyor/fields.h), grown to the largest batch's
    std::vector<BatchTensor> field_tensors;  // their device views (capacity kept: no allocation when warm)
    cuda::Event start{true};  // copy begins (timing)
    cuda::Event ready{true,
                      true};  // copy (and normalize) ends: consumers wait on it, the returner sleeps on it
    cuda::Event released;     // recorded on the consumer stream when the batch is given back
    cuda::Event joined;       // scratch for joining reader streams into the consumer stream
    cudaStream_t consumer = nullptr;    // the stream the held batch was made ready on
    std::vector<cudaStream_t> readers;  // other streams that read it (read_on)
    std::vector<SampleInfo> samples;    // host copy: the pinned batch goes back after the copy
    bool in_flight = false;             // a copy was issued and the returner has not retired it
    cuda::Event decode_start{true}, decode_end{true};  // around the decoding of deferred samples
    // CPU-decoded images on their way to the slot (page-locked; grown, never freed while decoding).
    std::optional<cuda::RetainedHostBuffer> fallback;
  };
  struct InFlight {
    std::size_t slot;
    Batch batch;
    std::size_t bytes;
    std::size_t deferred = 0;            // decoded on the device after the copy (events timed)
    double decode_host_s = 0;            // the stage thread's time in decoding
    std::shared_ptr<DecodeSplit> split;  // told how long the GPU decoder took
  };
  struct DecodeCounts {
    std::uint64_t gpu = 0, cpu = 0, failures = 0;
    std::array<std::uint64_t, 5> paths{};  // GPU-decoded, by NvjpegPath
    std::map<std::string, std::uint64_t> reasons;
    double host_seconds = 0, gpu_seconds = 0;
    cuda::NvjpegHostTimes nvjpeg;  // of host_seconds, nvJPEG's by phase
  };

  // Makes the CUDA context and everything of the feeder's that lives in it (pool, streams, ring, page-locked
  // memory, augmenter, pixel twins, returner), on set_up_; publishes the failure, if any, to await_device().
  void set_up() noexcept;
  // Waits until set_up() is done; rethrows what it failed with. Every entry point that touches the device
  // calls it first; the pipeline's side (host memory, the decode split) does not need it.
  void await_device() const;
  // The ring's device buffers for expected_, if feed() said already (on the set-up thread).
  void prepare_ring();
  // The augmentation (or normalize) kernels launched once into the first slot (sized for `capacity`), so
  // that their loading is not on a batch's way. Only while no batch is held.
  void launch_kernels_once(std::size_t capacity, ImageShape shape);
  // The slot's device buffer holds `capacity` samples of `shape` (and their images); allocated when not.
  void ensure_capacity(Slot& slot, std::size_t index, std::size_t capacity, ImageShape shape);
  enum class DecoderState : std::uint8_t { untried, starting, ready, unavailable };
  // nvJPEG and the decoder, made now if not yet (waiting for a startup thread that makes them); false
  // (stats_.decoder says why) when they cannot be.
  bool ensure_decoder();
  cuda::DeviceDecoder* decoder() const;  // null until ready
  // The startup thread's result: the decoder published, the current split started from its memory and
  // opened to the GPU.
  void on_decoder_ready(cuda::ReadyDecoder made, std::chrono::steady_clock::time_point fed_at) noexcept;
  // The startup thread's second decoder (DeviceDecode::open_before_second) handed over: noted in the stats.
  void on_second_decoder(cuda::DeviceDecoder::SecondDecoder made,
                         std::chrono::steady_clock::time_point fed_at) noexcept;
  // Starts `split` where the last run with the same key settled; returns what happened, for the stats.
  std::string recall_split(DecodeSplit& split);
  // Starts the planned decoder startup, if any (stage() after a batch, on the staging thread).
  void start_planned_startup();
  // The current split's settled share, written to the split memory (when asked for and measured enough).
  void remember_split() noexcept;
  // Copies the pixels of the samples the pipeline decoded (runs of slots, one batched call) into the slot;
  // returns the bytes left out (the deferred samples').
  std::size_t copy_decoded_samples(const Batch& batch, std::uint8_t* device_pixels, cudaStream_t stream);
  // Copies the batch's other fields into the slot on the copy stream; their device views into `fields`.
  // Returns the bytes copied.
  std::size_t copy_fields(Slot& slot, std::size_t index, const Batch& batch);
  // Decodes the batch's deferred samples into the slot on the copy stream; returns the host seconds spent.
  double decode_deferred(Slot& slot, const Batch& batch, std::uint8_t* device_pixels,
                         const DecodeSplit* split);
  // images() of the batch: the augmentation, or normalize alone.
  void make_images(const Batch& batch, const std::uint8_t* device_pixels, void* images, cudaStream_t stream);
  void return_batches();
  // Ends return_batches() once the queue is drained and joins its thread (when the set-up started it).
  void stop_returner() noexcept;
  void rethrow_failure_locked() const;
  // expect_batches' ring and kernels, on set_up_ once the set-up has ended: settles the device again.
  void prepare_ring_behind() noexcept;
  // Ends set_up() or prepare_ring_behind(): records how it went (record_locked runs under mutex_) and wakes
  // whoever waits in await_device().
  void settle_device(std::exception_ptr failure, const std::function<void()>& record_locked);

  const int device_;
  const FeederOptions options_;
  // The device side is made by set_up() on set_up_ (FeederOptions::set_up_behind), or its ring by
  // prepare_ring_behind() there: device_ready_ (set last, release) says it is there; device_settled_ and
  // device_failure_ (under mutex_) that it ended and how.
  std::thread set_up_;
  std::atomic<bool> device_ready_{false};
  bool device_settled_ = false;
  std::exception_ptr device_failure_;
  mutable std::condition_variable device_came_;
  struct ExpectedBatches {
    std::size_t capacity;
    ImageShape shape;
  };
  std::optional<ExpectedBatches> expected_;  // under mutex_
  std::unique_ptr<cuda::DeviceMemoryPool> own_pool_;  // before the streams and buffers: destroyed after them
  cuda::DeviceMemoryPool* pool_;
  // The pipelines' batch buffers: kept blocks over the late-locked memory, which hands the first ones out
  // before the context exists (late_locked_memory.h) and the feeder's page-locked ones after.
  std::shared_ptr<cuda::LateLockedHostMemory> early_memory_;
  std::shared_ptr<cuda::PinnedBlockCache> host_memory_;
  std::optional<cuda::Stream> copy_, own_consumer_;  // made with the device current
  cudaStream_t consumer_ = nullptr;
  HeldSlots held_;
  std::vector<Slot> slots_;                      // made with device_ current; never resized after
  std::optional<cuda::GpuAugmenter> augmenter_;  // when FeederOptions::augment has ops
  std::vector<std::unique_ptr<DevicePixelOp>> pixel_ops_;  // FeederOptions::pixel_ops' twins
  std::vector<std::uint64_t> seeds_;             // the augmenter's per-sample seeds (stage() only)

  // Hybrid decoding: decoder_ made by ensure_decoder() or the startup thread and then never replaced (its
  // pointer read under mutex_, its use by stage() one thread at a time), split_ by start_decoding().
  std::unique_ptr<cuda::DeviceDecoder> decoder_;
  DecoderState decoder_state_ = DecoderState::untried;
  std::shared_ptr<DecodeSplit> split_;
  // Where the split is remembered and under which key (under memory_mutex_: the startup thread recalls).
  std::mutex memory_mutex_;
  std::optional<SplitMemory> split_memory_;
  std::string split_key_;
  // copy_decoded_samples' scratch, kept from batch to batch.
  std::vector<SampleRun> runs_;
  std::vector<void*> copy_to_;
  std::vector<const void*> copy_from_;
  std::vector<std::size_t> copy_bytes_;
  OnError on_error_ = OnError::fail;
  std::shared_ptr<TraceRecorder> trace_;
  int decoder_track_ = -1;

  mutable std::mutex mutex_;  // slots' in_flight and readers, queue_, stats_, failure_
  std::condition_variable changed_;
  std::deque<InFlight> queue_;
  FeederStats stats_;  // decoder: the note start_decoding() left
  DecodeCounts decoded_;
  std::exception_ptr failure_;  // a copy or a release that failed on another thread, rethrown to the caller
  bool stopping_ = false;
  // Makes the decoder ready behind the CPU workers (DeviceDecode::start_at_once): planned by
  // start_decoding(), started by stage() once the first batch is on its way (so that nothing on that batch's
  // way waits behind nvJPEG's set-up), stopped and joined first in the destructor. Under mutex_.
  std::optional<cuda::DecoderPlan> startup_plan_;
  std::chrono::steady_clock::time_point fed_at_;
  std::unique_ptr<cuda::DecoderStartup> startup_;
  std::thread returner_;  // last: started when everything else exists, joined in the destructor
};

}  // namespace conveyor::detail
