// nvJPEG, loaded at run time: the build needs neither nvjpeg.h nor libnvjpeg, and a machine without them
// runs everything on the CPU. nvjpeg::load() opens libnvjpeg.so.13 (the CUDA 13 library), else
// libnvjpeg.so, and looks up every function the decoder calls; what it cannot find it says in one line
// ("nvJPEG unavailable: libnvjpeg.so.13: cannot open shared object file: ...").
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "src/device/nvjpeg/nvjpeg_api.h"

namespace conveyor::nvjpeg {

struct LoadResult;
// Tries each name in turn (as dlopen resolves it: LD_LIBRARY_PATH, the cache, ...).
LoadResult load(std::span<const std::string> names);
// load({"libnvjpeg.so.13", "libnvjpeg.so"}).
LoadResult load();

class Library {
 public:
  // The functions, looked up once. get_hardware_decoder_info is null in libraries older than 11.9; the
  // last three may be null too (the decoder then does without them).
  //
  // Why decode_batched_pre_allocate matters: without it, nvJPEG's hardware path allocates and frees device
  // memory inside nvjpegDecodeBatchedEx as batches change (the hang of 2026-11-27 caught a feeder thread in
  // cuMemFree under it). cuMemFree waits for the whole device: for every training step queued ahead of the
  // decode, and, when one process drives several GPUs, for an NCCL all-reduce that waits in turn for another
  // replica's thread. Called once, it makes the hardware decoder take its buffers from a pool that it keeps
  // (NVIDIA's nvImageCodec calls it for that reason even without size hints).
  struct Api {
    GetPropertyFn get_property = nullptr;
    CreateExFn create_ex = nullptr;
    DestroyFn destroy = nullptr;
    GetHardwareDecoderInfoFn get_hardware_decoder_info = nullptr;
    JpegStateCreateFn jpeg_state_create = nullptr;
    JpegStateDestroyFn jpeg_state_destroy = nullptr;
    JpegStreamCreateFn jpeg_stream_create = nullptr;
    JpegStreamDestroyFn jpeg_stream_destroy = nullptr;
    JpegStreamParseHeaderFn jpeg_stream_parse_header = nullptr;
    JpegStreamParseFn jpeg_stream_parse = nullptr;
    JpegStreamGetFrameDimensionsFn jpeg_stream_get_frame_dimensions = nullptr;
    DecodeParamsCreateFn decode_params_create = nullptr;
    DecodeParamsDestroyFn decode_params_destroy = nullptr;
    DecodeParamsSetOutputFormatFn decode_params_set_output_format = nullptr;
    DecodeParamsSetROIFn decode_params_set_roi = nullptr;
    DecodeBatchedInitializeFn decode_batched_initialize = nullptr;
    DecodeBatchedExFn decode_batched_ex = nullptr;
    DecodeBatchedSupportedExFn decode_batched_supported_ex = nullptr;
    DecodeBatchedPreAllocateFn decode_batched_pre_allocate = nullptr;
    SetDeviceMemoryPaddingFn set_device_memory_padding = nullptr;
    SetPinnedMemoryPaddingFn set_pinned_memory_padding = nullptr;
    DecoderCreateFn decoder_create = nullptr;
    DecoderDestroyFn decoder_destroy = nullptr;
    DecoderStateCreateFn decoder_state_create = nullptr;
    BufferPinnedCreateFn buffer_pinned_create = nullptr;
    BufferPinnedDestroyFn buffer_pinned_destroy = nullptr;
    BufferDeviceCreateFn buffer_device_create = nullptr;
    BufferDeviceDestroyFn buffer_device_destroy = nullptr;
    StateAttachPinnedBufferFn state_attach_pinned_buffer = nullptr;
    StateAttachDeviceBufferFn state_attach_device_buffer = nullptr;
    DecodeJpegHostFn decode_jpeg_host = nullptr;
    DecodeJpegTransferToDeviceFn decode_jpeg_transfer_to_device = nullptr;
    DecodeJpegDeviceFn decode_jpeg_device = nullptr;
  };

  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Api& api() const noexcept { return api_; }
  // The file the dynamic loader opened, symlinks resolved ("/usr/local/cuda/lib64/libnvjpeg.so.13.0.1").
  const std::string& path() const noexcept { return path_; }
  // "13.0.1" (from nvjpegGetProperty).
  const std::string& version() const noexcept { return version_; }

 private:
  friend LoadResult load(std::span<const std::string> names);
  Library() = default;
  void* handle_ = nullptr;  // dlopen's
  Api api_;
  std::string path_;
  std::string version_;
};

// The library, or why there is none.
struct LoadResult {
  std::shared_ptr<const Library> library;
  std::string unavailable;  // "nvJPEG unavailable: <reason>" when library is null
  explicit operator bool() const noexcept { return library != nullptr; }
};

// Throws DeviceError("<call> failed in <context>: NVJPEG_STATUS_... (<n>)") unless status is success.
void check(Status status, std::string_view call, std::string_view context);

}  // namespace conveyor::nvjpeg
