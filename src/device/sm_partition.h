// A share of a GPU's multiprocessors for the feeder's kernels (FeederOptions::gpu_sms): a CUDA green
// context over that many SMs. Work launched while its context is current (the feeder's streams, nvJPEG's
// internal streams and kernels, our crop-resize and augmentation) runs on those SMs only, so that a training
// step's kernels always find the others free and never wait for the feeder's blocks to drain from an SM.
// Memory, events and modules stay the primary context's: the green context is that context with fewer SMs.
//
// The driver's green-context calls are reached through cudaGetDriverEntryPointByVersion, so that nothing
// links libcuda (a machine without a GPU driver must still load the library).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

namespace conveyor::cuda {

class SmPartition {
 public:
  // At least `sms` SMs of `device` (the driver rounds up: multiples of 8 on compute capability 9.0). The
  // device's primary context must exist. Throws DeviceError when the driver has no green contexts (before
  // CUDA 12.4) or refuses the split, InvalidArgument for sms < 1.
  SmPartition(int device, int sms);
  ~SmPartition();
  SmPartition(const SmPartition&) = delete;
  SmPartition& operator=(const SmPartition&) = delete;

  int sms() const noexcept { return sms_; }                // the SMs it got
  int device_sms() const noexcept { return device_sms_; }  // the device's
  // "16 of 132 SMs (a green context)", for the feeder's report.
  std::string description() const;

 private:
  friend class PartitionGuard;
  PFN_cuCtxPushCurrent_v4000 push_ = nullptr;  // the driver's, found once
  PFN_cuCtxPopCurrent_v4000 pop_ = nullptr;
  PFN_cuGreenCtxDestroy_v12040 destroy_ = nullptr;
  CUgreenCtx green_ = nullptr;
  CUcontext context_ = nullptr;  // the green context as a CUcontext, to make current
  int sms_ = 0, device_sms_ = 0;
};

// Makes the partition's context current on this thread for the guard's lifetime (nothing with null).
class PartitionGuard {
 public:
  explicit PartitionGuard(const SmPartition* partition);
  ~PartitionGuard();
  PartitionGuard(const PartitionGuard&) = delete;
  PartitionGuard& operator=(const PartitionGuard&) = delete;

 private:
  const SmPartition* partition_;
};

}  // namespace conveyor::cuda
