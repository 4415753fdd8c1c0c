// Batched JPEG decoding on the GPU with nvJPEG, each image's crop window resized straight into its slot of a
// device batch: the GPU form of the decode_random_resized_crop op (windows come from gpu_decode_plan.h).
//
// Two nvJPEG paths, chosen per image:
//   hardware  the NVJPG engines (A100, H100, H200), through the batched API (nvjpegDecodeBatchedEx) on a
//             handle made with NVJPEG_BACKEND_HARDWARE; nvjpegDecodeBatchedSupportedEx says per image whether
//             the engines take it (baseline Huffman JPEGs, not 4:1:1 / 4:1:0; not progressive).
//   software  the GPU hybrid backend (Huffman on the GPU; or on the CPU with NvjpegSoftwareBackend::hybrid)
//             through the decoupled API (nvjpegDecodeJpegHost / TransferToDevice / Device), one image after
//             another, for what the engines refuse, or everything on GPUs without them. What GPU hybrid
//             refuses (JPEG_NOT_SUPPORTED) is tried once more with Huffman on the CPU.
// ROI: both paths take a window through nvjpegDecodeParamsSetROI. The hardware path asks
// nvjpegDecodeBatchedSupportedEx with the window set and, if refused, asks again for the whole image; the
// decoupled path honours it as given. The decoded window (or whole image) goes to scratch device memory and
// crop_resize_linear resizes it into the slot with OpenCV's INTER_LINEAR arithmetic.
//
// What nvJPEG refuses or fails on is reported per image (the slot is then left as it was), so the caller can
// decode those on the CPU and count them by reason.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/ops/rect.h"
#include "src/device/device_memory.h"
#include "src/device/image/crop_resize.h"
#include "src/device/nvjpeg/gpu_decode_plan.h"
#include "src/device/nvjpeg/nvjpeg_library.h"

namespace conveyor::cuda {

enum class NvjpegSoftwareBackend : std::uint8_t {
  gpu_hybrid,  // NVJPEG_BACKEND_GPU_HYBRID: Huffman decoding on the GPU
  hybrid,      // NVJPEG_BACKEND_HYBRID: Huffman decoding on the calling CPU thread
};

struct NvjpegDecoderOptions {
  int device = 0;
  bool hardware = true;  // use the hardware decoder where the GPU has one
  bool hardware_pipelining = false;  // DeviceDecode::hardware_pipelining
  bool hardware_pool = true;         // DeviceDecode::hardware_pool: prepare() gives the engines a kept pool
  int blocks_per_image = 0;          // the crop-resize's (FeederOptions::kernel_blocks_per_image)
  // nvJPEG's own allocations (the software path's buffers) rounded up to multiples of these, so that a
  // slightly larger image does not make it free and allocate again.
  std::size_t device_padding = std::size_t{16} << 20;
  std::size_t pinned_padding = std::size_t{8} << 20;
  NvjpegSoftwareBackend software = NvjpegSoftwareBackend::gpu_hybrid;
  // Where the hardware decoder exists: what its engines refuse goes to the software path above (true), or
  // back to the caller as engines_refused (false: nothing but the engines decodes; DeviceDecode::gpu_hybrid).
  bool software_beside_hardware = true;
  bool roi = true;                             // decode only the crop window where nvJPEG allows it
  ops::ColorMode color = ops::ColorMode::rgb;  // rgb (3 channels) or gray (1); keep is per image: not here
};

// One image to decode: its bytes, its window in the stored image (plan_random_resized_crop's), its slot.
struct NvjpegRequest {
  std::span<const std::uint8_t> jpeg;
  ops::Rect window;
  std::uint32_t slot = 0;
};

// How an image was decoded.
enum class NvjpegPath : std::uint8_t { hardware, hardware_roi, software, software_roi, fallback };
const char* to_string(NvjpegPath path) noexcept;

// Where decode()'s host time went, summed over its calls (seconds).
struct NvjpegHostTimes {
  double wait = 0;    // waiting for this decoder's previous batch on the GPU (its scratch and states)
  double check = 0;   // parsing each image's header and asking nvJPEG which path takes it
  double decode = 0;  // nvJPEG's decode calls: the hardware batch, then the software path image by image
  double resize = 0;  // the crop-resize jobs: their copy to the device and the kernel's launch

  NvjpegHostTimes& operator+=(const NvjpegHostTimes& other) noexcept {
    wait += other.wait;
    check += other.check;
    decode += other.decode;
    resize += other.resize;
    return *this;
  }
  friend NvjpegHostTimes operator-(NvjpegHostTimes a, const NvjpegHostTimes& b) noexcept {
    a.wait -= b.wait;
    a.check -= b.check;
    a.decode -= b.decode;
    a.resize -= b.resize;
    return a;
  }
};

struct NvjpegOutcome {
  NvjpegPath path = NvjpegPath::fallback;
  GpuDecodeFallback fallback = GpuDecodeFallback::none;  // why, when path is fallback
  // What nvJPEG said when it refused or failed the image; for an image the software path decoded, the failure
  // of the hardware batch it was first sent in (success when there was none).
  nvjpeg::Status status = nvjpeg::Status::success;
};

// Not thread-safe: one decoder per thread (nvJPEG's states belong to one thread at a time).
class NvjpegBatchDecoder {
 public:
  // Throws DeviceError when nvJPEG cannot be set up on the device, InvalidArgument on bad options.
  NvjpegBatchDecoder(std::shared_ptr<const nvjpeg::Library> library, DeviceMemoryPool& pool,
                     NvjpegDecoderOptions options);
  ~NvjpegBatchDecoder();
  NvjpegBatchDecoder(const NvjpegBatchDecoder&) = delete;
  NvjpegBatchDecoder& operator=(const NvjpegBatchDecoder&) = delete;

  // Whether the hardware path is in use.
  bool hardware() const noexcept;
  // Sizes what the decoder keeps for batches of up to `images` requests: the hardware decoder's pool
  // (nvjpegDecodeBatchedPreAllocate with frames of width x height as a hint; the pool grows past it by
  // itself) and the resize jobs' buffers. Warm-up calls it with the ring's batch capacity; decode() calls it
  // again only for a larger batch. Without it (or with hardware_pool off) nvJPEG's hardware path frees and
  // allocates device memory inside its decode calls, and cuMemFree waits for the whole device.
  void prepare(std::size_t images, int width, int height);
  // The images prepare() sized for (0: not yet).
  std::size_t prepared() const noexcept;
  // One line for logs: library version and file, the paths in use, and why the hardware path is not.
  const std::string& description() const noexcept;
  // Where the constructor's time went: "stream and events 0.001 s, hardware handle 0.512 s, ...".
  const std::string& setup_phases() const noexcept;

  // Enqueues the decoding of every request and the resize of its window into its slot of `out`; `out` is
  // ready when `stream` reaches this point, and the encoded bytes must stay valid until then. Work the
  // caller enqueued on `stream` before the call (say, reads of the slots) happens first. Returns one
  // outcome per request (a window outside the image as nvJPEG reads it: fallback size_mismatch). Throws
  // InvalidArgument on a slot past out.count or an output of the wrong channel count; DeviceError when
  // CUDA fails.
  std::vector<NvjpegOutcome> decode(std::span<const NvjpegRequest> requests, const DeviceSlots& out,
                                    cudaStream_t stream);
  // decode()'s host time so far, by phase.
  const NvjpegHostTimes& host_times() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace conveyor::cuda
