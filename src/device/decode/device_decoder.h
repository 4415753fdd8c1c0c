// The feeder's GPU decoder: a batch's deferred samples (Batch::samples()[i].deferred, each with the
// ops::DeferredCrop its op left) decoded by nvJPEG straight into their slots of the ring buffer; what nvJPEG
// refuses is decoded on the CPU (ops::decode_deferred_crop: the op's own pixels) into a page-locked staging
// buffer and copied into its slot; what neither can decode is zeroed and reported.
//
// Two NvjpegBatchDecoders for RGB. With DeviceDecode::decode_threads = 2 each submits half of every batch,
// the second on a thread of its own (nvJPEG's host work, 41 us an image on an H200, kept one thread busy
// 92 % of the time). With 1 (the default) they are used in turn on the calling thread: one waits for
// its previous batch's GPU work before it reuses its buffers, so alternating lets the host work of one
// batch overlap the GPU work of the one before.
// Not thread-safe: the feeder calls it from one thread at a time; only make_second() may run on another,
// beside decode().
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/cuda/device_feeder.h"
#include "src/device/cuda_handles.h"
#include "src/device/decode/helper_thread.h"
#include "src/device/decode/warmup_jpegs.h"
#include "src/device/device_memory.h"
#include "src/device/nvjpeg/nvjpeg_batch_decoder.h"
#include "src/device/nvjpeg/nvjpeg_library.h"
#include "src/device/retained_host_buffer.h"

namespace conveyor::cuda {

// What decode() did with one batch.
struct DeviceDecodeOutcome {
  std::size_t deferred = 0;  // deferred samples in the batch
  std::size_t gpu = 0;       // decoded by nvJPEG
  std::size_t cpu = 0;       // refused by nvJPEG, decoded on the CPU
  // Why each CPU-decoded one went there ("nvjpeg: size_mismatch", "nvjpeg: NVJPEG_STATUS_..."), and the
  // samples neither could decode (slot zeroed), with the CPU's error.
  std::vector<std::string> fallback_reasons;
  std::vector<std::pair<std::size_t, std::string>> failed;
  NvjpegHostTimes nvjpeg;  // nvJPEG's host time for this batch, by phase
  // The GPU-decoded images by path (indexed by NvjpegPath; the fallback entry stays 0).
  std::array<std::size_t, 5> paths{};
};

class DeviceDecoder {
 public:
  // Throws DeviceError when nvJPEG cannot be set up on `device`. blocks_per_image: the crop-resize kernel's
  // (FeederOptions::kernel_blocks_per_image).
  DeviceDecoder(std::shared_ptr<const nvjpeg::Library> library, DeviceMemoryPool& pool, int device,
                const DeviceDecode& options, int blocks_per_image = 0);

  // Enqueues the decoding of `batch`'s deferred samples into `pixels` (device memory: batch.size() images
  // of batch.sample_shape(), contiguous) on `stream`, after the work already queued there (the copy of the
  // batch's other pixels). The CPU fallbacks are decoded now, into `staging` (grown as needed; page-locked;
  // it must not be reused before `stream` has passed this point). The batch's bytes must stay alive until
  // then too. Throws DeviceError when CUDA fails.
  DeviceDecodeOutcome decode(const Batch& batch, std::uint8_t* pixels, cudaStream_t stream,
                             RetainedHostBuffer& staging);

  // Warm-up (DeviceFeeder::warmup): both RGB decoders made and sized for batches of up to `images` deferred
  // images (the hardware pool, the resize jobs), then a throwaway batch of synthetic JPEGs (warmup_jpegs.h)
  // through each of them, every decode path and the resize, into `pixels` (room for `images` images of
  // `shape` on the device), on `stream`. Waits for it. Returns a line for logs: what each path decoded.
  std::string warm_up(std::size_t images, ImageShape shape, std::uint8_t* pixels, cudaStream_t stream);

  // Start at once's order (decoder_startup.h), so that the split opens before the second RGB decoder is
  // made: warm_up_first() sizes and warms the first alone (as warm_up() does both), and decode() then uses
  // it for every batch, each waiting for the one before on the GPU, until make_second(), called on another
  // thread, has made, sized and warmed the second (with its own `stream` and `pixels`) and handed it over;
  // decode() takes it at its next call. make_second() returns its phases for logs, or, when it failed, why
  // (the first decoder then goes on alone). Each returns what the warm-up decoded by path.
  std::string warm_up_first(std::size_t images, ImageShape shape, std::uint8_t* pixels, cudaStream_t stream);
  struct SecondDecoder {
    bool made = false;
    std::string phases;  // "decoder 0.310 s (...), warm-up 0.040 s", or why it failed
    std::string warmup;
  };
  SecondDecoder make_second(std::size_t images, ImageShape shape, std::uint8_t* pixels, cudaStream_t stream);

  // Where the first RGB decoder's construction spent its time (NvjpegBatchDecoder::setup_phases).
  const std::string& setup_phases() const noexcept;

  // "nvJPEG 13.0.1 (...) on gpu:0: hardware decoder (...), then GPU hybrid ..." for logs and stats.
  const std::string& description() const noexcept { return description_; }
  const std::string& nvjpeg_version() const noexcept { return library_->version(); }

 private:
  NvjpegBatchDecoder& decoder_for(int channels);
  // The second RGB decoder: taken over from make_second() when it has handed it over, made now when no
  // startup makes it; null while make_second() is still making it.
  NvjpegBatchDecoder* second_rgb();
  // DeviceDecode::decode_threads: the first half of requests_ decoded by `first` on this thread, the second
  // half by `second` on helper_, at the same time; one outcome per request, in order; their host times.
  std::vector<NvjpegOutcome> decode_in_halves(NvjpegBatchDecoder& first, NvjpegBatchDecoder& second,
                                              const DeviceSlots& slots, cudaStream_t stream,
                                              NvjpegHostTimes& times);
  std::unique_ptr<NvjpegBatchDecoder> make_decoder(int channels) const;
  // Sizes `decoder` for `images` and decodes a throwaway batch of `jpegs` (warmup_jpegs()) through every
  // path; adds to paths[].
  void warm(NvjpegBatchDecoder& decoder, const std::vector<WarmupJpeg>& jpegs, std::size_t images,
            ImageShape shape, std::uint8_t* pixels, cudaStream_t stream, std::size_t (&paths)[5]) const;

  std::shared_ptr<const nvjpeg::Library> library_;
  DeviceMemoryPool* pool_;
  int device_;
  DeviceDecode options_;
  int blocks_per_image_;
  // Per channel count (index 0: gray, 1: RGB), two decoders used in turn; made on first need (RGB now).
  std::unique_ptr<NvjpegBatchDecoder> decoders_[2][2];
  std::size_t turn_ = 0;
  // decode_in_halves(): the second decoder's thread and stream, made at its first call. Declared after the
  // decoders: the thread is joined before they go.
  std::optional<HelperThread> helper_;
  std::optional<Stream> helper_stream_;
  std::optional<Event> halves_start_, second_half_done_;
  // The second RGB decoder while make_second() makes it on another thread: decode() uses the first alone
  // until it finds it handed over here.
  std::atomic<bool> second_coming_{false};
  std::mutex handover_mutex_;
  std::unique_ptr<NvjpegBatchDecoder> handed_over_;
  std::string description_;
  // Scratch, kept from batch to batch.
  std::vector<NvjpegRequest> requests_;
  std::vector<std::size_t> which_;  // sample of each request
};

}  // namespace conveyor::cuda
