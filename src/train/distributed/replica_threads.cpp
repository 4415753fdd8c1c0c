#include "src/train/distributed/replica_threads.h"

#include <optional>
#include <utility>

namespace conveyor::train {

ReplicaThreads::ReplicaThreads(std::size_t count, std::shared_ptr<ProgressWatch> watch,
                               std::vector<std::string> names)
    : watch_(std::move(watch)), names_(std::move(names)), errors_(count) {
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
  const ProgressWatch::Doing doing("waiting for the replicas' threads");
  finished_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
  for (const std::exception_ptr& error : errors_)
    if (error) std::rethrow_exception(error);
}

void ReplicaThreads::work(std::size_t index) {
  std::optional<ProgressWatch::Member> member;
  if (watch_) {
    try {
      member.emplace(watch_, index < names_.size() ? names_[index] : "replica " + std::to_string(index));
    } catch (...) {
      // Not watched: a report will miss this thread's line.
    }
  }
  std::size_t seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    {
      const ProgressWatch::Doing doing("idle, waiting for the next job");
      started_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    }
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
