// RAII owners of CUDA streams, events and plain device allocations.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "src/device/cuda_check.h"
#include "src/device/primary_context.h"

namespace conveyor::cuda {

// Makes `device` current for the lifetime of the guard and restores the previous one after, unless this
// process has no context on the previous one (a thread that never chose a device): then the thread keeps
// `device`, and no context is made on a GPU the process does not use (src/device/primary_context.h).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    CONVEYOR_CUDA(cudaGetDevice(&previous_), "DeviceGuard");
    if (previous_ != device) CONVEYOR_CUDA(cudaSetDevice(device), "DeviceGuard");
  }
  ~DeviceGuard() { restore_device(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

class Stream {
 public:
  // `priority`: CUDA's stream priority on the current device, lower is more urgent (0, the default, is the
  // least urgent; cudaDeviceGetStreamPriorityRange gives the most urgent).
  explicit Stream(int priority = 0) {
    CONVEYOR_CUDA(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority), "Stream");
  }
  ~Stream() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }
  cudaStream_t get() const noexcept { return stream_; }
  void synchronize() const { CONVEYOR_CUDA(cudaStreamSynchronize(stream_), "Stream::synchronize"); }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  // Timing events cost more to record; ask for them only where elapsed times are read. A blocking-sync
  // event puts a thread that waits in synchronize() to sleep instead of spinning on a core.
  explicit Event(bool timing = false, bool blocking_sync = false) {
    const unsigned flags =
        (timing ? cudaEventDefault : cudaEventDisableTiming) | (blocking_sync ? cudaEventBlockingSync : 0u);
    CONVEYOR_CUDA(cudaEventCreateWithFlags(&event_, flags), "Event");
  }
  ~Event() {
    if (event_) cudaEventDestroy(event_);
  }
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  cudaEvent_t get() const noexcept { return event_; }
  void record(cudaStream_t stream) { CONVEYOR_CUDA(cudaEventRecord(event_, stream), "Event::record"); }
  bool done() const {
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) return false;
    CONVEYOR_CUDA(status, "Event::done");
    return true;
  }
  void synchronize() const { CONVEYOR_CUDA(cudaEventSynchronize(event_), "Event::synchronize"); }
  // Milliseconds between two recorded timing events.
  static float elapsed_ms(const Event& start, const Event& end) {
    float ms = 0;
    CONVEYOR_CUDA(cudaEventElapsedTime(&ms, start.event_, end.event_), "Event::elapsed_ms");
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace conveyor::cuda
