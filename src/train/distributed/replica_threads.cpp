#include "src/train/distributed/replica_threads.h"

namespace conveyor::train {

ReplicaThreads::ReplicaThreads(std::size_t count) : errors_(count) {
  threads_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) threads_.emplace_back([this, i] { work(i); });
}

ReplicaThreads::~ReplicaThreads() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  started_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void ReplicaThreads::run(const std::function<void(std::size_t)>& job) {
  std::unique_lock lock(mutex_);
  job_ = &job;
  running_ = threads_.size();
  for (std::exception_ptr& error : errors_) error = nullptr;
  ++generation_;
  started_.notify_all();
  finished_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
  for (const std::exception_ptr& error : errors_)
    if (error) std::rethrow_exception(error);
}

void ReplicaThreads::work(std::size_t index) {
  std::size_t seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    started_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    const std::function<void(std::size_t)>& job = *job_;
    lock.unlock();
    std::exception_ptr error;
    try {
      job(index);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    errors_[index] = error;
    if (--running_ == 0) finished_.notify_one();
  }
}

}  // namespace conveyor::train
