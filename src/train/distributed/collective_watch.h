// The watchdog of an NCCL communicator: a thread that ends the communicator when its collectives stop
// making progress, as PyTorch's ProcessGroupNCCL watchdog does. Without it, a rank whose peer was killed
// waits in its next host wait for the GPU (a loss read back, a synchronize) without end: NCCL's kernels on
// NVLink or shared memory spin for a peer that will never come, and nothing reports it.
//
// The trainer marks points of its stream after collectives (mark(): after every step, after collectives
// outside the step). The watch records an event at each and, every poll_interval, looks at the oldest one
// still pending: when it has not completed for `limit` since it was recorded or since the one before it
// completed, whichever is later, the collectives it follows are stuck, and the watch aborts the communicator
// (its kernels stop, so the host's waits return) and keeps the reason, which the trainer's next call
// throws. It also aborts at once on an error NCCL found by itself (a peer's connection reset).
//
// The reason goes to stderr when the watch decides, before the abort: NCCL's abort can itself hang (it waits
// for kernels to leave and, within a host, for the other ranks), and so can a CUDA wait of the trainer's.
// A rank that has not torn the watch down (its trainer destroyed) within `abort_grace` of the decision is
// ended with exit status 1 (std::_Exit: nothing of it can be trusted to unwind), as PyTorch's
// ProcessGroupNCCL watchdog ends a rank; zero leaves it to hang.
//
// The watch's own CUDA and NCCL calls can block behind the stuck collectives too (the driver makes them wait
// for a call of the trainer's that waits for the device), so none is made while holding the lock the
// trainer's mark() takes, and a BlockedCallAlarm, a thread that makes no such call, decides in the watch's
// stead when one of them has not returned within `limit`.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/device/cuda_handles.h"
#include "src/train/distributed/blocked_call_alarm.h"
#include "src/train/distributed/nccl_handle.h"

namespace conveyor::train {

class CollectiveWatch {
 public:
  // Watches `handle` (which must outlive the watch) on its device.
  CollectiveWatch(NcclHandle& handle, std::chrono::milliseconds limit, std::chrono::milliseconds abort_grace,
                  std::chrono::milliseconds poll_interval = std::chrono::milliseconds(200));
  ~CollectiveWatch();  // stops the thread and joins it
  CollectiveWatch(const CollectiveWatch&) = delete;
  CollectiveWatch& operator=(const CollectiveWatch&) = delete;

  // A point of `stream` after the collectives issued so far; `what` says which ("step 57"). Not while the
  // stream is being captured into a CUDA graph (the replay's point is marked after the launch).
  void mark(cudaStream_t stream, std::string what);

 private:
  struct Point {
    cuda::Event event;
    std::chrono::steady_clock::time_point recorded;
    std::string what;
  };

  void run();
  // One look; returns the reason to abort, or empty.
  std::string inspect();
  // Says `reason`, aborts the communicator and, with an abort grace, ends the process if the rank is still
  // there when it has passed. Once per watch, whichever thread decides first (the watch's, or its alarm's).
  void abort_stuck(const std::string& reason);

  NcclHandle& handle_;
  const std::chrono::milliseconds limit_, abort_grace_, poll_interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Point> pending_;
  std::vector<cuda::Event> spare_;  // completed points' events, recorded again
  std::chrono::steady_clock::time_point last_completed_;
  bool stop_ = false;
  std::atomic<bool> decided_ = false;
  BlockedCallAlarm alarm_;  // times the watch thread's calls
  std::thread thread_;      // last: starts after everything it reads exists
};

}  // namespace conveyor::train
