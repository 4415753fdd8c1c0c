// Compile-time proof that src/device/nvjpeg/nvjpeg_api.h (our declarations, used through dlopen) agrees with
// NVIDIA's nvjpeg.h: every enum value we use is equal, every struct has the same size and layout, and every
// function type equals decltype(&nvjpegXxx) once the header's types are mapped to ours. Nothing runs: the
// program compiles or names what differs. CMake builds it where nvjpeg.h is found; by hand:
//   g++ -std=c++20 -I include -I . -I /usr/local/cuda/include tests/device/nvjpeg_abi_check.cpp -fsyntax-only
#include <nvjpeg.h>

#include <cstddef>
#include <type_traits>

#include "src/device/nvjpeg/nvjpeg_api.h"

namespace {

namespace nv = conveyor::nvjpeg;

// Ours<T>: the type of nvjpeg_api.h that stands for type T of nvjpeg.h (T itself for everything else:
// int, size_t, cudaStream_t, libraryPropertyType). Pointers, const and function pointers map part by part.
template <class T>
struct Ours {
  using type = T;
};
template <class T>
using ours_t = typename Ours<T>::type;
template <class T>
struct Ours<const T> {
  using type = const ours_t<T>;
};
template <class T>
struct Ours<T*> {
  using type = ours_t<T>*;
};
template <class R, class... Args>
struct Ours<R (*)(Args...)> {
  using type = ours_t<R> (*)(ours_t<Args>...);
};

#define CONVEYOR_OURS(theirs, ours) \
  template <>                       \
  struct Ours<theirs> {             \
    using type = ours;              \
  }

CONVEYOR_OURS(nvjpegStatus_t, nv::Status);
CONVEYOR_OURS(nvjpegBackend_t, nv::Backend);
CONVEYOR_OURS(nvjpegOutputFormat_t, nv::OutputFormat);
CONVEYOR_OURS(nvjpegChromaSubsampling_t, nv::ChromaSubsampling);
CONVEYOR_OURS(nvjpegHandle_t, nv::Handle);
CONVEYOR_OURS(nvjpegJpegState_t, nv::State);
CONVEYOR_OURS(nvjpegJpegStream_t, nv::JpegStream);
CONVEYOR_OURS(nvjpegDecodeParams_t, nv::DecodeParams);
CONVEYOR_OURS(nvjpegJpegDecoder_t, nv::Decoder);
CONVEYOR_OURS(nvjpegBufferPinned_t, nv::PinnedBuffer);
CONVEYOR_OURS(nvjpegBufferDevice_t, nv::DeviceBuffer);
CONVEYOR_OURS(nvjpegImage_t, nv::Image);
CONVEYOR_OURS(nvjpegDevAllocator_t, nv::DevAllocator);
CONVEYOR_OURS(nvjpegPinnedAllocator_t, nv::PinnedAllocator);

// ---- enums: same size, same values
// --------------------------------------------------------------------------
static_assert(sizeof(nv::Status) == sizeof(nvjpegStatus_t), "nvjpegStatus_t size");
static_assert(sizeof(nv::Backend) == sizeof(nvjpegBackend_t), "nvjpegBackend_t size");
static_assert(sizeof(nv::OutputFormat) == sizeof(nvjpegOutputFormat_t), "nvjpegOutputFormat_t size");
static_assert(sizeof(nv::ChromaSubsampling) == sizeof(nvjpegChromaSubsampling_t),
              "nvjpegChromaSubsampling_t size");

#define CONVEYOR_SAME_VALUE(ours, theirs) \
  static_assert(static_cast<long long>(ours) == static_cast<long long>(theirs), #ours " != " #theirs)

CONVEYOR_SAME_VALUE(nv::Status::success, NVJPEG_STATUS_SUCCESS);
CONVEYOR_SAME_VALUE(nv::Status::not_initialized, NVJPEG_STATUS_NOT_INITIALIZED);
CONVEYOR_SAME_VALUE(nv::Status::invalid_parameter, NVJPEG_STATUS_INVALID_PARAMETER);
CONVEYOR_SAME_VALUE(nv::Status::bad_jpeg, NVJPEG_STATUS_BAD_JPEG);
CONVEYOR_SAME_VALUE(nv::Status::jpeg_not_supported, NVJPEG_STATUS_JPEG_NOT_SUPPORTED);
CONVEYOR_SAME_VALUE(nv::Status::allocator_failure, NVJPEG_STATUS_ALLOCATOR_FAILURE);
CONVEYOR_SAME_VALUE(nv::Status::execution_failed, NVJPEG_STATUS_EXECUTION_FAILED);
CONVEYOR_SAME_VALUE(nv::Status::arch_mismatch, NVJPEG_STATUS_ARCH_MISMATCH);
CONVEYOR_SAME_VALUE(nv::Status::internal_error, NVJPEG_STATUS_INTERNAL_ERROR);
CONVEYOR_SAME_VALUE(nv::Status::implementation_not_supported, NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED);
CONVEYOR_SAME_VALUE(nv::Status::incomplete_bitstream, NVJPEG_STATUS_INCOMPLETE_BITSTREAM);

CONVEYOR_SAME_VALUE(nv::Backend::automatic, NVJPEG_BACKEND_DEFAULT);
CONVEYOR_SAME_VALUE(nv::Backend::hybrid, NVJPEG_BACKEND_HYBRID);
CONVEYOR_SAME_VALUE(nv::Backend::gpu_hybrid, NVJPEG_BACKEND_GPU_HYBRID);
CONVEYOR_SAME_VALUE(nv::Backend::hardware, NVJPEG_BACKEND_HARDWARE);

CONVEYOR_SAME_VALUE(nv::OutputFormat::y, NVJPEG_OUTPUT_Y);
CONVEYOR_SAME_VALUE(nv::OutputFormat::rgbi, NVJPEG_OUTPUT_RGBI);

CONVEYOR_SAME_VALUE(nv::ChromaSubsampling::css_444, NVJPEG_CSS_444);
CONVEYOR_SAME_VALUE(nv::ChromaSubsampling::css_422, NVJPEG_CSS_422);
CONVEYOR_SAME_VALUE(nv::ChromaSubsampling::css_420, NVJPEG_CSS_420);
CONVEYOR_SAME_VALUE(nv::ChromaSubsampling::css_440, NVJPEG_CSS_440);
CONVEYOR_SAME_VALUE(nv::ChromaSubsampling::css_411, NVJPEG_CSS_411);
CONVEYOR_SAME_VALUE(nv::ChromaSubsampling::css_410, NVJPEG_CSS_410);
CONVEYOR_SAME_VALUE(nv::ChromaSubsampling::gray, NVJPEG_CSS_GRAY);
CONVEYOR_SAME_VALUE(nv::ChromaSubsampling::css_410v, NVJPEG_CSS_410V);
CONVEYOR_SAME_VALUE(nv::ChromaSubsampling::unknown, NVJPEG_CSS_UNKNOWN);

CONVEYOR_SAME_VALUE(nv::kMaxComponent, NVJPEG_MAX_COMPONENT);
CONVEYOR_SAME_VALUE(nv::kFlagsDefault, NVJPEG_FLAGS_DEFAULT);
CONVEYOR_SAME_VALUE(nv::kFlagsHwDecodeNoPipeline, NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE);

// ---- structs: same size, same member offsets
// ---------------------------------------------------------------
static_assert(sizeof(nv::Image) == sizeof(nvjpegImage_t), "nvjpegImage_t size");
static_assert(offsetof(nv::Image, channel) == offsetof(nvjpegImage_t, channel), "nvjpegImage_t::channel");
static_assert(offsetof(nv::Image, pitch) == offsetof(nvjpegImage_t, pitch), "nvjpegImage_t::pitch");
static_assert(std::is_same_v<decltype(nv::Image::pitch[0]), decltype(nvjpegImage_t::pitch[0])>, "pitch type");
static_assert(sizeof(nv::DevAllocator) == sizeof(nvjpegDevAllocator_t), "nvjpegDevAllocator_t size");
static_assert(
    std::is_same_v<decltype(nv::DevAllocator::dev_malloc), decltype(nvjpegDevAllocator_t::dev_malloc)>,
    "nvjpegDevAllocator_t::dev_malloc");
static_assert(std::is_same_v<decltype(nv::DevAllocator::dev_free), decltype(nvjpegDevAllocator_t::dev_free)>,
              "nvjpegDevAllocator_t::dev_free");
static_assert(sizeof(nv::PinnedAllocator) == sizeof(nvjpegPinnedAllocator_t), "nvjpegPinnedAllocator_t size");
static_assert(std::is_same_v<decltype(nv::PinnedAllocator::pinned_malloc),
                             decltype(nvjpegPinnedAllocator_t::pinned_malloc)>,
              "nvjpegPinnedAllocator_t::pinned_malloc");
static_assert(std::is_same_v<decltype(nv::PinnedAllocator::pinned_free),
                             decltype(nvjpegPinnedAllocator_t::pinned_free)>,
              "nvjpegPinnedAllocator_t::pinned_free");

// ---- functions: our type is the header's, mapped ----------------------------------------------------------
#define CONVEYOR_SAME_FUNCTION(ours, theirs) \
  static_assert(std::is_same_v<ours_t<decltype(&theirs)>, nv::ours>, #theirs " does not match nv::" #ours)

CONVEYOR_SAME_FUNCTION(GetPropertyFn, nvjpegGetProperty);
CONVEYOR_SAME_FUNCTION(CreateExFn, nvjpegCreateEx);
CONVEYOR_SAME_FUNCTION(DestroyFn, nvjpegDestroy);
CONVEYOR_SAME_FUNCTION(GetHardwareDecoderInfoFn, nvjpegGetHardwareDecoderInfo);
CONVEYOR_SAME_FUNCTION(JpegStateCreateFn, nvjpegJpegStateCreate);
CONVEYOR_SAME_FUNCTION(JpegStateDestroyFn, nvjpegJpegStateDestroy);
CONVEYOR_SAME_FUNCTION(JpegStreamCreateFn, nvjpegJpegStreamCreate);
CONVEYOR_SAME_FUNCTION(JpegStreamDestroyFn, nvjpegJpegStreamDestroy);
CONVEYOR_SAME_FUNCTION(JpegStreamParseHeaderFn, nvjpegJpegStreamParseHeader);
CONVEYOR_SAME_FUNCTION(JpegStreamParseFn, nvjpegJpegStreamParse);
CONVEYOR_SAME_FUNCTION(JpegStreamGetFrameDimensionsFn, nvjpegJpegStreamGetFrameDimensions);
CONVEYOR_SAME_FUNCTION(DecodeParamsCreateFn, nvjpegDecodeParamsCreate);
CONVEYOR_SAME_FUNCTION(DecodeParamsDestroyFn, nvjpegDecodeParamsDestroy);
CONVEYOR_SAME_FUNCTION(DecodeParamsSetOutputFormatFn, nvjpegDecodeParamsSetOutputFormat);
CONVEYOR_SAME_FUNCTION(DecodeParamsSetROIFn, nvjpegDecodeParamsSetROI);
CONVEYOR_SAME_FUNCTION(DecodeBatchedInitializeFn, nvjpegDecodeBatchedInitialize);
CONVEYOR_SAME_FUNCTION(DecodeBatchedExFn, nvjpegDecodeBatchedEx);
CONVEYOR_SAME_FUNCTION(DecodeBatchedSupportedExFn, nvjpegDecodeBatchedSupportedEx);
CONVEYOR_SAME_FUNCTION(DecodeBatchedPreAllocateFn, nvjpegDecodeBatchedPreAllocate);
CONVEYOR_SAME_FUNCTION(SetDeviceMemoryPaddingFn, nvjpegSetDeviceMemoryPadding);
CONVEYOR_SAME_FUNCTION(SetPinnedMemoryPaddingFn, nvjpegSetPinnedMemoryPadding);
CONVEYOR_SAME_FUNCTION(DecoderCreateFn, nvjpegDecoderCreate);
CONVEYOR_SAME_FUNCTION(DecoderDestroyFn, nvjpegDecoderDestroy);
CONVEYOR_SAME_FUNCTION(DecoderStateCreateFn, nvjpegDecoderStateCreate);
CONVEYOR_SAME_FUNCTION(BufferPinnedCreateFn, nvjpegBufferPinnedCreate);
CONVEYOR_SAME_FUNCTION(BufferPinnedDestroyFn, nvjpegBufferPinnedDestroy);
CONVEYOR_SAME_FUNCTION(BufferDeviceCreateFn, nvjpegBufferDeviceCreate);
CONVEYOR_SAME_FUNCTION(BufferDeviceDestroyFn, nvjpegBufferDeviceDestroy);
CONVEYOR_SAME_FUNCTION(StateAttachPinnedBufferFn, nvjpegStateAttachPinnedBuffer);
CONVEYOR_SAME_FUNCTION(StateAttachDeviceBufferFn, nvjpegStateAttachDeviceBuffer);
CONVEYOR_SAME_FUNCTION(DecodeJpegHostFn, nvjpegDecodeJpegHost);
CONVEYOR_SAME_FUNCTION(DecodeJpegTransferToDeviceFn, nvjpegDecodeJpegTransferToDevice);
CONVEYOR_SAME_FUNCTION(DecodeJpegDeviceFn, nvjpegDecodeJpegDevice);

}  // namespace
