#include "src/device/nvjpeg/nvjpeg_handles.h"

#include <utility>

#include "conveyor/error.h"
#include "src/device/cuda_handles.h"

namespace conveyor::cuda {
namespace {

constexpr const char* kHandlesContext = "nvJPEG handles";

}  // namespace

NvjpegHandles::NvjpegHandles(std::shared_ptr<const nvjpeg::Library> library,
                             const NvjpegHandleOptions& options)
    : library_(std::move(library)), options_(options) {
  if (!library_) throw InvalidArgument(std::string(kHandlesContext) + ": no nvJPEG library");
  const nvjpeg::Library::Api& api = library_->api();
  DeviceGuard guard(options.device);
  hardware_note_ = "hardware decoder not asked for";
  if (options.hardware) {
    nvjpeg::Handle handle = nullptr;
    const unsigned int flags =
        options.hardware_pipelining ? nvjpeg::kFlagsDefault : nvjpeg::kFlagsHwDecodeNoPipeline;
    const nvjpeg::Status status = api.create_ex(nvjpeg::Backend::hardware, nullptr, nullptr, flags, &handle);
    if (status == nvjpeg::Status::success) {
      hardware_ = nvjpeg::Owned<nvjpeg::Handle>(handle, api.destroy);
      unsigned int engines = 0, cores = 0;
      hardware_note_ = "hardware decoder";
      if (api.get_hardware_decoder_info != nullptr &&
          api.get_hardware_decoder_info(handle, &engines, &cores) == nvjpeg::Status::success)
        hardware_note_ += " (" + std::to_string(engines) + " engines x " + std::to_string(cores) + " cores)";
      if (!options.hardware_pipelining) hardware_note_ += ", one batch at a time";
    } else {
      hardware_note_ = std::string("no hardware decoder (nvjpegCreateEx with NVJPEG_BACKEND_HARDWARE: ") +
                       nvjpeg::to_string(status) + ")";
    }
  }
}

void NvjpegHandles::make_software() {
  if (software_) return;
  const nvjpeg::Library::Api& api = library_->api();
  DeviceGuard guard(options_.device);
  software_ =
      nvjpeg::make<nvjpeg::Handle>(api.create_ex, api.destroy, "nvjpegCreateEx", kHandlesContext,
                                   nvjpeg::Backend::automatic, static_cast<nvjpeg::DevAllocator*>(nullptr),
                                   static_cast<nvjpeg::PinnedAllocator*>(nullptr), nvjpeg::kFlagsDefault);
  // Padding only rounds sizes up; a library without it allocates exactly what each image needs.
  for (const nvjpeg::Handle handle : {software_.get(), hardware_.get()}) {
    if (handle == nullptr) continue;
    if (api.set_device_memory_padding != nullptr && options_.device_padding > 0)
      nvjpeg::check(api.set_device_memory_padding(options_.device_padding, handle),
                    "nvjpegSetDeviceMemoryPadding", kHandlesContext);
    if (api.set_pinned_memory_padding != nullptr && options_.pinned_padding > 0)
      nvjpeg::check(api.set_pinned_memory_padding(options_.pinned_padding, handle),
                    "nvjpegSetPinnedMemoryPadding", kHandlesContext);
  }
}

}  // namespace conveyor::cuda
