// nvJPEG's library handles for one device: the hardware decoder's (NVJPEG_BACKEND_HARDWARE, where the GPU
// has the engines and it was asked for) and the software path's. Making them is most of what a decoder's
// set-up costs: on an H200 (2026-11-29) the first hardware handle of a process took 0.66-0.68 s, a second
// one 0.25-0.29 s, a software handle 0.09-0.16 s, everything else about 1 ms. nvJPEG lets threads share a
// handle (only bitstreams, states and buffers belong to one thread at a time), so the decoders of one
// feeder share one set: its second decoder then costs its states and a warm-up batch.
#pragma once

#include <memory>
#include <string>

#include "src/device/nvjpeg/nvjpeg_library.h"
#include "src/device/nvjpeg/nvjpeg_objects.h"

namespace conveyor::cuda {

struct NvjpegHandleOptions {
  int device = 0;
  bool hardware = true;              // make the hardware decoder's handle where the GPU has one
  bool hardware_pipelining = false;  // DeviceDecode::hardware_pipelining
  // nvJPEG's own allocations on the software path rounded up to multiples of these, so that a
  // slightly larger image does not make it free and allocate again.
  std::size_t device_padding = std::size_t{16} << 20;
  std::size_t pinned_padding = std::size_t{8} << 20;

  bool operator==(const NvjpegHandleOptions&) const = default;
};

class NvjpegHandles {
 public:
  // Throws DeviceError when the software handle cannot be made on `options.device`; a hardware handle that
  // cannot be made is no error (hardware_note() says why there is none).
  NvjpegHandles(std::shared_ptr<const nvjpeg::Library> library, const NvjpegHandleOptions& options);
  NvjpegHandles(const NvjpegHandles&) = delete;
  NvjpegHandles& operator=(const NvjpegHandles&) = delete;

  const NvjpegHandleOptions& options() const noexcept { return options_; }
  nvjpeg::Handle hardware() const noexcept { return hardware_.get(); }  // null without the engines
  nvjpeg::Handle software() const noexcept { return software_.get(); }
  // "hardware decoder (7 engines x 1 cores), one batch at a time", or why there is none, for logs.
  const std::string& hardware_note() const noexcept { return hardware_note_; }
  // Where the constructor's time went: "hardware handle 0.673 s, software handle 0.095 s".
  const std::string& setup_phases() const noexcept { return setup_phases_; }

 private:
  std::shared_ptr<const nvjpeg::Library> library_;  // first: outlives the handles
  NvjpegHandleOptions options_;
  nvjpeg::Owned<nvjpeg::Handle> hardware_;
  nvjpeg::Owned<nvjpeg::Handle> software_;
  std::string hardware_note_;
  std::string setup_phases_;
};

}  // namespace conveyor::cuda
