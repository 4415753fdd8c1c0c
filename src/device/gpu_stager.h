// The GPU half of DeviceFeeder: a ring of device buffers filled by cudaMemcpyAsync on a copy stream, and
// a returner thread that gives each pinned batch back to its pool the moment its copy has finished.
//
// Why a thread and not cudaLaunchHostFunc: a host function runs on CUDA's internal thread and must not
// call CUDA, but releasing a Batch runs its pool's deleter, which is not ours to constrain (a pool being
// torn down frees pinned memory with cudaFreeHost). It would also stall the copy stream while it runs.
// Polling the copy's event at the next stage() call would hold every pinned buffer for a whole training
// step instead of for the copy. The returner sleeps in cudaEventSynchronize on a blocking-sync event, so it
// costs no core, and releases each batch on a thread the feeder owns and joins.
#pragma once

#ifdef CONVEYOR_HAVE_CUDA

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/device_feeder.h"
#include "conveyor/staged_batch.h"
#include "src/device/cuda_handles.h"
#include "src/device/device_memory.h"

namespace conveyor::detail {

class GpuStager {
 public:
  // shared_pool may be null: the stager then owns a pool without a limit.
  GpuStager(int device, int depth, cuda::DeviceMemoryPool* shared_pool);
  ~GpuStager();
  GpuStager(const GpuStager&) = delete;
  GpuStager& operator=(const GpuStager&) = delete;

  StagedBatch stage(Batch batch);
  void synchronize();
  FeederStats stats() const;

 private:
  struct Slot {
    cuda::DeviceBuffer buffer;       // pixels, then labels at label_offset
    std::size_t pixel_capacity = 0;  // bytes of pixels the buffer holds
    std::size_t label_offset = 0;
    cuda::Event start{true};        // copy begins (timing)
    cuda::Event ready{true, true};  // copy ends: the step waits on it, the returner sleeps on it
    cuda::Event consumed;           // recorded by the step after its last read of this slot
    bool in_flight = false;         // a copy was issued and the returner has not retired it (mutex_)
  };
  struct InFlight {
    std::size_t slot;
    Batch batch;
    std::size_t bytes;
  };

  void ensure_capacity(Slot& slot, std::size_t index, const Batch& batch);
  void return_batches();
  void rethrow_failure_locked() const;

  int device_;
  int depth_;
  std::unique_ptr<cuda::DeviceMemoryPool> own_pool_;  // before the stream and buffers: destroyed after them
  cuda::DeviceMemoryPool* pool_;
  std::optional<cuda::Stream> copy_;  // made with the device current
  std::vector<Slot> slots_;           // never resized after construction
  std::uint64_t next_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<InFlight> queue_;
  FeederStats stats_;
  std::exception_ptr failure_;  // a copy that failed on the returner thread, rethrown to the caller
  bool stopping_ = false;
  std::thread returner_;  // last: started when everything else exists, joined in the destructor
};

}  // namespace conveyor::detail

#endif  // CONVEYOR_HAVE_CUDA
