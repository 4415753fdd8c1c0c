#include "src/device/decode/helper_thread.h"

#include <cuda_runtime.h>

#include <utility>

#include "conveyor/error.h"

namespace conveyor::cuda {

HelperThread::HelperThread(int device) : thread_([this, device] { loop(device); }) {}

HelperThread::~HelperThread() {
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !job_; });
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void HelperThread::start(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (handed_) throw InvalidArgument("HelperThread: a job was handed over before the last one was waited for");
    handed_ = true;
    job_ = std::move(job);
    failure_ = nullptr;
  }
  changed_.notify_all();
}

void HelperThread::wait() {
  std::exception_ptr failure;
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !job_; });
    handed_ = false;
    failure = std::exchange(failure_, nullptr);
  }
  if (failure) std::rethrow_exception(failure);
}

void HelperThread::loop(int device) {
  // A failure here shows up in the job's first CUDA call, which names it.
  cudaSetDevice(device);
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || job_; });
    if (stopping_) return;
    std::function<void()> job = job_;  // job_ stays set: it says "not done yet" to wait()
    lock.unlock();
    std::exception_ptr failure;
    try {
      job();
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    failure_ = failure;
    job_ = nullptr;
    changed_.notify_all();
  }
}

}  // namespace conveyor::cuda
