// Makes a feeder's GPU decoder ready on a thread of its own, so that feed() returns at once and the CPU
// workers decode every image meanwhile (issue 41, "start at once"): nvJPEG loaded, the first decoder made,
// the pipeline's page-locked batch buffers made, the hardware decoder's pool sized, a throwaway batch of
// synthetic JPEGs through every path (so that CUDA loads their kernels now, not under a real batch). Then
// it hands the decoder over; the feeder opens its split to the GPU (decode_split.h). The second decoder
// (the two take batches in turn) is made and warmed after that, and handed over when ready
// (DeviceDecode::open_before_second; off: both before the split opens).
//
// Why not on the first batch: all of that took 1.3 s on an H200 (2026-11-28), and the first hybrid batch
// waited for it while CPU-only's came after 0.03 s. The feeder starts it once its first batch is on its way,
// so that nothing on that batch's way (the ring's first buffer, the augmentation's kernel loading, the
// first page-locked buffer) can wait behind nvJPEG's own set-up in the driver. Why its own stream and
// scratch: the ring's slots are the staging thread's by then. A destroyed startup stops at its next phase and
// is joined; a phase already on the GPU (the warm-up batch) is waited for, which is bounded.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/image.h"
#include "src/device/decode/device_decoder.h"
#include "src/device/device_memory.h"
#include "src/device/pinned_block_cache.h"

namespace conveyor::cuda {

// What the startup makes ready.
struct DecoderPlan {
  int device = 0;
  DeviceMemoryPool* pool = nullptr;  // the feeder's; outlives the startup
  DeviceDecode options;
  int blocks_per_image = 0;  // FeederOptions::kernel_blocks_per_image
  // The warm-up batch: the pipeline's batch size and sample shape (0 images: no warm-up batch).
  std::size_t images = 0;
  ImageShape shape;
  // The pipeline's page-locked batch buffers to make now (bytes each, count); null: none.
  std::shared_ptr<PinnedBlockCache> host_memory;
  std::size_t host_block_bytes = 0, host_blocks = 0;
};

// What came of it.
struct ReadyDecoder {
  std::unique_ptr<DeviceDecoder> decoder;  // null when nvJPEG cannot decode here (note says why)
  std::string note;                        // the decoder's description, or why there is none
  std::string warmup;                      // what the warm-up batch decoded by path
  double seconds = 0;                      // from start to ready
  std::string phases;                      // "library 0.004 s, decoder 0.611 s, ...": where the seconds went
  bool second_behind = false;              // the second RGB decoder is still to be made (make_second_decoder)
};

// Does the whole plan on the calling thread; returns early (decoder null, note "stopped") once `stop` is set.
// Never throws: a failure is the note.
ReadyDecoder make_decoder_ready(const DecoderPlan& plan, const std::atomic<bool>& stop) noexcept;

// Makes and warms the second RGB decoder of one that make_decoder_ready() left alone (second_behind), and
// hands it over to it (DeviceDecoder::make_second); `decoder` may decode batches on another thread meanwhile.
// Never throws: a failure is the result's phases.
DeviceDecoder::SecondDecoder make_second_decoder(const DecoderPlan& plan, DeviceDecoder& decoder) noexcept;

class DecoderStartup {
 public:
  // Runs make_decoder_ready(plan) on a thread of its own and calls `ready` there with the result; then, when
  // it left the second decoder to make, make_second_decoder() and `second` with its result. Neither is
  // called after the destructor has begun; neither may throw. The decoder handed to `ready` must outlive
  // this object (the second is handed over to it).
  DecoderStartup(DecoderPlan plan, std::function<void(ReadyDecoder)> ready,
                 std::function<void(DeviceDecoder::SecondDecoder)> second = {});
  // Stops the startup at its next phase and joins it.
  ~DecoderStartup();
  DecoderStartup(const DecoderStartup&) = delete;
  DecoderStartup& operator=(const DecoderStartup&) = delete;

  // Waits until the thread has finished (ready has been called, or it stopped).
  void wait();

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace conveyor::cuda
