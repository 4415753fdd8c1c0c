#include "src/device/nvjpeg/nvjpeg_library.h"

#include <dlfcn.h>

#include <filesystem>
#include <type_traits>

#include "conveyor/error.h"

namespace conveyor::nvjpeg {
namespace {

// Looks up every function of the Api in `handle`; returns the first required one that is missing, or "".
std::string look_up(void* handle, Library::Api& api) {
  std::string missing;
  const auto find = [&](auto& function, const char* symbol, bool required) {
    void* address = dlsym(handle, symbol);
    if (address == nullptr && required && missing.empty()) missing = symbol;
    // dlsym returns code addresses as void*; turning one back into a function pointer is what it is for.
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(address);
  };
  find(api.get_property, "nvjpegGetProperty", true);
  find(api.create_ex, "nvjpegCreateEx", true);
  find(api.destroy, "nvjpegDestroy", true);
  find(api.get_hardware_decoder_info, "nvjpegGetHardwareDecoderInfo", false);
  find(api.jpeg_state_create, "nvjpegJpegStateCreate", true);
  find(api.jpeg_state_destroy, "nvjpegJpegStateDestroy", true);
  find(api.jpeg_stream_create, "nvjpegJpegStreamCreate", true);
  find(api.jpeg_stream_destroy, "nvjpegJpegStreamDestroy", true);
  find(api.jpeg_stream_parse_header, "nvjpegJpegStreamParseHeader", true);
  find(api.jpeg_stream_parse, "nvjpegJpegStreamParse", true);
  find(api.jpeg_stream_get_frame_dimensions, "nvjpegJpegStreamGetFrameDimensions", true);
  find(api.decode_params_create, "nvjpegDecodeParamsCreate", true);
  find(api.decode_params_destroy, "nvjpegDecodeParamsDestroy", true);
  find(api.decode_params_set_output_format, "nvjpegDecodeParamsSetOutputFormat", true);
  find(api.decode_params_set_roi, "nvjpegDecodeParamsSetROI", true);
  find(api.decode_batched_initialize, "nvjpegDecodeBatchedInitialize", true);
  find(api.decode_batched_ex, "nvjpegDecodeBatchedEx", true);
  find(api.decode_batched_supported_ex, "nvjpegDecodeBatchedSupportedEx", true);
  find(api.decode_batched_pre_allocate, "nvjpegDecodeBatchedPreAllocate", false);
  find(api.set_device_memory_padding, "nvjpegSetDeviceMemoryPadding", false);
  find(api.set_pinned_memory_padding, "nvjpegSetPinnedMemoryPadding", false);
  find(api.decoder_create, "nvjpegDecoderCreate", true);
  find(api.decoder_destroy, "nvjpegDecoderDestroy", true);
  find(api.decoder_state_create, "nvjpegDecoderStateCreate", true);
  find(api.buffer_pinned_create, "nvjpegBufferPinnedCreate", true);
  find(api.buffer_pinned_destroy, "nvjpegBufferPinnedDestroy", true);
  find(api.buffer_device_create, "nvjpegBufferDeviceCreate", true);
  find(api.buffer_device_destroy, "nvjpegBufferDeviceDestroy", true);
  find(api.state_attach_pinned_buffer, "nvjpegStateAttachPinnedBuffer", true);
  find(api.state_attach_device_buffer, "nvjpegStateAttachDeviceBuffer", true);
  find(api.decode_jpeg_host, "nvjpegDecodeJpegHost", true);
  find(api.decode_jpeg_transfer_to_device, "nvjpegDecodeJpegTransferToDevice", true);
  find(api.decode_jpeg_device, "nvjpegDecodeJpegDevice", true);
  return missing;
}

std::string file_of(const void* code, const std::string& fallback) {
  Dl_info info{};
  if (dladdr(code, &info) == 0 || info.dli_fname == nullptr) return fallback;
  std::error_code error;
  const auto real = std::filesystem::canonical(info.dli_fname, error);
  return error ? std::string(info.dli_fname) : real.string();
}

std::string version_of(const Library::Api& api) {
  int major = 0, minor = 0, patch = 0;
  if (api.get_property(MAJOR_VERSION, &major) != Status::success ||
      api.get_property(MINOR_VERSION, &minor) != Status::success ||
      api.get_property(PATCH_LEVEL, &patch) != Status::success)
    return "unknown";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

const char* to_string(Status status) noexcept {
  switch (status) {
    case Status::success:
      return "NVJPEG_STATUS_SUCCESS";
    case Status::not_initialized:
      return "NVJPEG_STATUS_NOT_INITIALIZED";
    case Status::invalid_parameter:
      return "NVJPEG_STATUS_INVALID_PARAMETER";
    case Status::bad_jpeg:
      return "NVJPEG_STATUS_BAD_JPEG";
    case Status::jpeg_not_supported:
      return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case Status::allocator_failure:
      return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case Status::execution_failed:
      return "NVJPEG_STATUS_EXECUTION_FAILED";
    case Status::arch_mismatch:
      return "NVJPEG_STATUS_ARCH_MISMATCH";
    case Status::internal_error:
      return "NVJPEG_STATUS_INTERNAL_ERROR";
    case Status::implementation_not_supported:
      return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case Status::incomplete_bitstream:
      return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "unknown nvJPEG status";
}

Library::~Library() {
  if (handle_ != nullptr) dlclose(handle_);
}

LoadResult load(std::span<const std::string> names) {
  std::string reasons;
  const auto add_reason = [&reasons](const std::string& reason) {
    if (!reasons.empty()) reasons += "; ";
    reasons += reason;
  };
  for (const std::string& name : names) {
    dlerror();
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      add_reason(error != nullptr ? std::string(error) : name + ": cannot be opened");
      continue;
    }
    std::shared_ptr<Library> library(new Library);  // the constructor is private to this function
    library->handle_ = handle;
    const std::string missing = look_up(handle, library->api_);
    if (!missing.empty()) {
      std::string reason = name;
      reason += ": has no function ";
      reason += missing;
      add_reason(reason);
      continue;  // the library closes its handle
    }
    library->path_ = file_of(reinterpret_cast<const void*>(library->api_.create_ex), name);
    library->version_ = version_of(library->api_);
    return {library, ""};
  }
  if (names.empty()) add_reason("no library name to try");
  return {nullptr, "nvJPEG unavailable: " + reasons};
}

LoadResult load() {
  static const std::string kNames[] = {"libnvjpeg.so.13", "libnvjpeg.so"};
  return load(kNames);
}

void check(Status status, std::string_view call, std::string_view context) {
  if (status == Status::success) return;
  throw DeviceError(std::string(call) + " failed in " + std::string(context) + ": " + to_string(status) +
                    " (" + std::to_string(static_cast<int>(status)) + ")");
}

}  // namespace conveyor::nvjpeg
