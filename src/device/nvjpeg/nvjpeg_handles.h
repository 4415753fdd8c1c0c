// nvJPEG's library handles for one device: the hardware decoder's (NVJPEG_BACKEND_HARDWARE, where the GPU
// has the engines and it was asked for) and the software path's. Making them is most of what a decoder's
// set-up costs, and nvJPEG lets threads share a handle (only bitstreams, states and buffers belong to one
// thread at a time), so the decoders of one feeder share one set: on an H200 (2026-11-29) a second decoder
// with handles of its own took 0.43-0.48 s to make, one sharing them 0.14-0.18 s (its hardware state).
//
// They are made in two steps because the order costs: the hardware handle, then the first decoder's
// hardware state, then the software handle (make_software()). Made with the software handle between the
// other two, the first decoder took 1.18-1.20 s instead of 0.75-0.76 s.
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
  // nvJPEG's own allocations rounded up to multiples of these, so that a slightly larger image does not
  // make it free and allocate again.
  std::size_t device_padding = std::size_t{16} << 20;
  std::size_t pinned_padding = std::size_t{8} << 20;

  bool operator==(const NvjpegHandleOptions&) const = default;
};

class NvjpegHandles {
 public:
  // Makes the hardware handle (where asked for); one that cannot be made is no error (hardware_note() says
  // why there is none). Throws InvalidArgument without a library.
  NvjpegHandles(std::shared_ptr<const nvjpeg::Library> library, const NvjpegHandleOptions& options);
  // Makes the software handle, once (the first decoder calls it after making its hardware state); throws
  // DeviceError when it cannot be made. Then sets the padding of both.
  void make_software();
  NvjpegHandles(const NvjpegHandles&) = delete;
  NvjpegHandles& operator=(const NvjpegHandles&) = delete;

  const NvjpegHandleOptions& options() const noexcept { return options_; }
  nvjpeg::Handle hardware() const noexcept { return hardware_.get(); }  // null without the engines
  nvjpeg::Handle software() const noexcept { return software_.get(); }  // null before make_software()
  // "hardware decoder (7 engines x 1 cores), one batch at a time", or why there is none, for logs.
  const std::string& hardware_note() const noexcept { return hardware_note_; }

 private:
  std::shared_ptr<const nvjpeg::Library> library_;  // first: outlives the handles
  NvjpegHandleOptions options_;
  nvjpeg::Owned<nvjpeg::Handle> hardware_;
  nvjpeg::Owned<nvjpeg::Handle> software_;
  std::string hardware_note_;
};

}  // namespace conveyor::cuda
