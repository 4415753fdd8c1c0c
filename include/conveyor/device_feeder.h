// Moves ready batches to where the training step reads them, overlapped with everything else.
//
// On a GPU: each batch is copied with cudaMemcpyAsync on the feeder's own copy stream into one of `depth`
// device buffers (a ring). The StagedBatch it returns carries two events: the step's stream waits on
// `ready` before reading and records `consumed` when it has last read the buffers; the feeder makes its
// copy stream wait on `consumed` before it overwrites that ring slot again, so neither host thread blocks.
// The pinned host buffer goes back to its pool the moment its copy has finished.
//
// On the CPU: nothing is copied; the StagedBatch points at the batch's own memory, and the feeder keeps
// the batch alive until its ring slot comes round again, `depth` stage() calls later.
//
// The contract in both cases: a StagedBatch stays valid until `depth` further stage() calls, and on a GPU
// its `consumed` event must have been recorded before then (so at most depth - 1 staged batches may
// still wait for their step when stage() is called). Only uint8 NHWC pixels and int64 labels are copied.
#pragma once

#include <cstdint>
#include <memory>

#include "conveyor/batch.h"
#include "conveyor/device.h"
#include "conveyor/staged_batch.h"

namespace conveyor {

namespace cuda {
class DeviceMemoryPool;  // src/device/device_memory.h; exists only in builds with CUDA
}

struct FeederStats {
  std::uint64_t batches = 0;   // stage() calls
  std::uint64_t copies = 0;    // host-to-device copies finished (pixels and labels of one batch count once)
  std::uint64_t bytes = 0;     // bytes copied to the device by finished copies
  double copy_seconds = 0;     // time those copies took on the copy stream (CUDA events)
  std::uint64_t pageable = 0;  // batches not in page-locked memory: staged by the driver through a bounce
                               // buffer, slower and partly synchronous with the host
  std::uint64_t allocations = 0;  // device ring buffers allocated (first batch, or a larger batch)
  std::uint64_t host_waits = 0;   // stage() calls that had to wait for an earlier copy into the same slot
};

class DeviceFeeder {
 public:
  // depth: buffers in the ring, 2 (double) or 3 (triple buffering); 1 to 8 accepted. On a GPU placement
  // the feeder owns a memory pool for its buffers without a limit.
  explicit DeviceFeeder(const Placement& placement, int depth = 3);
  // The ring buffers come from `pool` (shared with the model, under its limit); it must outlive the feeder
  // and belong to the placement's device.
  DeviceFeeder(const Placement& placement, cuda::DeviceMemoryPool& pool, int depth = 3);
  ~DeviceFeeder();  // waits for copies in flight, gives every batch back, frees the buffers
  DeviceFeeder(const DeviceFeeder&) = delete;
  DeviceFeeder& operator=(const DeviceFeeder&) = delete;

  // Starts moving `batch` to the step's device and returns where the step will find it. Throws
  // InvalidArgument for an empty batch, DeviceMemoryError when a ring buffer does not fit, DeviceError
  // when a CUDA call (or an earlier copy) failed.
  StagedBatch stage(Batch batch);

  // Waits until every copy has finished and every pinned batch has been given back.
  void synchronize();

  FeederStats stats() const;
  const Placement& placement() const noexcept;
  int depth() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conveyor
