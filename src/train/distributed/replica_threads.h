// One thread per local replica, for one process driving several GPUs. NCCL needs every replica to reach
// a collective before any of them completes it, and the first collectives of a communicator also wait on
// the host while the replicas connect: one thread issuing replica 0's step and then replica 1's would wait
// in replica 0's first all-reduce for a replica it has not started. ncclGroupStart/End, NCCL's answer for
// one thread, does not fit either, because each replica's all-reduces are issued from inside its own
// backward pass. So each replica gets its own thread, kept for the trainer's lifetime (a step is a few
// milliseconds; starting threads for each would be a visible share of it). oneTBB has no such thing: its
// tasks are not guaranteed to run at the same time.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/progress_watch.h"

namespace conveyor::train {

class ReplicaThreads {
 public:
  // Thread i joins `watch` (when given) as names[i] for its lifetime, so that a stall report names it.
  explicit ReplicaThreads(std::size_t count, std::shared_ptr<ProgressWatch> watch = nullptr,
                          std::vector<std::string> names = {});
  ~ReplicaThreads();  // asks the threads to end and joins them
  ReplicaThreads(const ReplicaThreads&) = delete;
  ReplicaThreads& operator=(const ReplicaThreads&) = delete;

  std::size_t size() const noexcept { return threads_.size(); }
  // Runs job(i) on thread i for every i at once and returns when all have returned; then rethrows the
  // exception of the lowest i that threw, if any. One run at a time (the caller's thread waits).
  void run(const std::function<void(std::size_t)>& job);

 private:
  void work(std::size_t index);

  const std::shared_ptr<ProgressWatch> watch_;
  const std::vector<std::string> names_;
  std::mutex mutex_;
  std::condition_variable started_, finished_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t generation_ = 0;  // one per run(): tells each thread there is a new job
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;  // last: started after everything they read exists
};

}  // namespace conveyor::train
