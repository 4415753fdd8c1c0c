// A thread of its own that runs one job at a time for its owner, who hands a job over, does work of its own
// meanwhile, and then waits for it: the feeder's second nvJPEG decoder submits its half of a batch here
// while the staging thread submits the first half (DeviceDecode::decode_threads). Bound to the decoder's
// CUDA device when it starts (a fresh thread would bind device 0).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace conveyor::cuda {

class HelperThread {
 public:
  explicit HelperThread(int device);
  // Waits for the job in hand, if any, then joins.
  ~HelperThread();
  HelperThread(const HelperThread&) = delete;
  HelperThread& operator=(const HelperThread&) = delete;

  // Runs `job` on the thread. One at a time: wait() for a job before handing over the next.
  void start(std::function<void()> job);
  // Until the job handed over has run; rethrows what it threw. Returns at once when there is none.
  void wait();

 private:
  void loop(int device);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> job_;  // set: handed over and not yet done
  bool handed_ = false;        // handed over and not yet waited for
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace conveyor::cuda
