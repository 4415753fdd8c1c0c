// The part of nvJPEG's C API this project calls, declared here because the library is loaded at run time
// (dlopen, nvjpeg_library.h) and its header is not on every machine that builds conveyor. Written from
// NVIDIA's nvJPEG documentation (docs.nvidia.com/cuda/nvjpeg): type declarations, return codes, and the
// helper, decode-parameter, batched and decoupled decode API references.
//
// A wrong value or signature here would not fail to compile, it would misbehave: the program
// tests/device/nvjpeg_abi_check.cpp, built wherever nvjpeg.h is found, includes both and static_asserts that
// every value and every function type below equals the real header's.
#pragma once

#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstddef>

namespace conveyor::nvjpeg {

// Opaque objects of the library (nvjpegHandle_t, nvjpegJpegState_t, ...).
struct HandleObject;
struct StateObject;
struct JpegStreamObject;
struct DecodeParamsObject;
struct DecoderObject;
struct PinnedBufferObject;
struct DeviceBufferObject;
using Handle = HandleObject*;
using State = StateObject*;
using JpegStream = JpegStreamObject*;
using DecodeParams = DecodeParamsObject*;
using Decoder = DecoderObject*;
using PinnedBuffer = PinnedBufferObject*;
using DeviceBuffer = DeviceBufferObject*;

// nvjpegStatus_t.
enum class Status : int {
  success = 0,
  not_initialized = 1,
  invalid_parameter = 2,
  bad_jpeg = 3,
  jpeg_not_supported = 4,
  allocator_failure = 5,
  execution_failed = 6,
  arch_mismatch = 7,
  internal_error = 8,
  implementation_not_supported = 9,
  incomplete_bitstream = 10,
};

// nvjpegBackend_t: who does the Huffman decoding.
enum class Backend : int {
  automatic = 0,   // NVJPEG_BACKEND_DEFAULT
  hybrid = 1,      // Huffman on the CPU, the rest on the GPU
  gpu_hybrid = 2,  // Huffman on the GPU too
  hardware = 3,    // the NVJPG engines (A100, H100, ...): baseline JPEGs only
};

// nvjpegOutputFormat_t (the ones used here).
enum class OutputFormat : int {
  y = 2,     // luma only, to channel[0]
  rgbi = 5,  // interleaved RGB, to channel[0]
};

// nvjpegChromaSubsampling_t.
enum class ChromaSubsampling : int {
  css_444 = 0,
  css_422 = 1,
  css_420 = 2,
  css_440 = 3,
  css_411 = 4,
  css_410 = 5,
  gray = 6,
  css_410v = 7,
  unknown = -1,
};

inline constexpr int kMaxComponent = 4;           // NVJPEG_MAX_COMPONENT
inline constexpr unsigned int kFlagsDefault = 0;             // NVJPEG_FLAGS_DEFAULT
inline constexpr unsigned int kFlagsHwDecodeNoPipeline = 1;  // NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE

// nvjpegImage_t: where decoded planes go (device memory). Interleaved formats use channel[0] only.
struct Image {
  unsigned char* channel[kMaxComponent];
  std::size_t pitch[kMaxComponent];
};

// nvjpegDevAllocator_t and nvjpegPinnedAllocator_t (passed as null here: the library's own allocators).
struct DevAllocator {
  int (*dev_malloc)(void**, std::size_t);
  int (*dev_free)(void*);
};
struct PinnedAllocator {
  int (*pinned_malloc)(void**, std::size_t, unsigned int);
  int (*pinned_free)(void*);
};

// The functions, one type each (the name of the C function follows "nvjpeg").
using GetPropertyFn = Status (*)(libraryPropertyType, int*);
using CreateExFn = Status (*)(Backend, DevAllocator*, PinnedAllocator*, unsigned int, Handle*);
using DestroyFn = Status (*)(Handle);
using GetHardwareDecoderInfoFn = Status (*)(Handle, unsigned int*, unsigned int*);
using JpegStateCreateFn = Status (*)(Handle, State*);
using JpegStateDestroyFn = Status (*)(State);
using JpegStreamCreateFn = Status (*)(Handle, JpegStream*);
using JpegStreamDestroyFn = Status (*)(JpegStream);
using JpegStreamParseHeaderFn = Status (*)(Handle, const unsigned char*, std::size_t, JpegStream);
using JpegStreamParseFn = Status (*)(Handle, const unsigned char*, std::size_t, int, int, JpegStream);
using JpegStreamGetFrameDimensionsFn = Status (*)(JpegStream, unsigned int*, unsigned int*);
using DecodeParamsCreateFn = Status (*)(Handle, DecodeParams*);
using DecodeParamsDestroyFn = Status (*)(DecodeParams);
using DecodeParamsSetOutputFormatFn = Status (*)(DecodeParams, OutputFormat);
using DecodeParamsSetROIFn = Status (*)(DecodeParams, int, int, int, int);
using DecodeBatchedInitializeFn = Status (*)(Handle, State, int, int, OutputFormat);
using DecodeBatchedExFn = Status (*)(Handle, State, const unsigned char* const*, const std::size_t*, Image*,
                                     DecodeParams*, cudaStream_t);
using DecodeBatchedSupportedExFn = Status (*)(Handle, JpegStream, DecodeParams, int*);
// Sizes the hardware decoder's internal buffers from a memory pool once, for batches of up to the given
// count and frame size; optional (nvjpeg_library.h says why it matters).
using DecodeBatchedPreAllocateFn = Status (*)(Handle, State, int, int, int, ChromaSubsampling, OutputFormat);
// Rounds every device (pinned) allocation the handle makes up to a multiple of the padding; optional.
using SetDeviceMemoryPaddingFn = Status (*)(std::size_t, Handle);
using SetPinnedMemoryPaddingFn = Status (*)(std::size_t, Handle);
using DecoderCreateFn = Status (*)(Handle, Backend, Decoder*);
using DecoderDestroyFn = Status (*)(Decoder);
using DecoderStateCreateFn = Status (*)(Handle, Decoder, State*);
using BufferPinnedCreateFn = Status (*)(Handle, PinnedAllocator*, PinnedBuffer*);
using BufferPinnedDestroyFn = Status (*)(PinnedBuffer);
using BufferDeviceCreateFn = Status (*)(Handle, DevAllocator*, DeviceBuffer*);
using BufferDeviceDestroyFn = Status (*)(DeviceBuffer);
using StateAttachPinnedBufferFn = Status (*)(State, PinnedBuffer);
using StateAttachDeviceBufferFn = Status (*)(State, DeviceBuffer);
using DecodeJpegHostFn = Status (*)(Handle, Decoder, State, DecodeParams, JpegStream);
using DecodeJpegTransferToDeviceFn = Status (*)(Handle, Decoder, State, JpegStream, cudaStream_t);
using DecodeJpegDeviceFn = Status (*)(Handle, Decoder, State, Image*, cudaStream_t);

// Name of a status as the header spells it ("NVJPEG_STATUS_BAD_JPEG"), or "unknown nvJPEG status".
const char* to_string(Status status) noexcept;

}  // namespace conveyor::nvjpeg
