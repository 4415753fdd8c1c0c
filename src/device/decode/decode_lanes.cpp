#include "src/device/decode/decode_lanes.h"

#include "conveyor/error.h"

namespace conveyor::cuda {

DecodeLanes::DecodeLanes(std::size_t count) : errors_(count) {
  if (count == 0) throw InvalidArgument("DecodeLanes: at least one lane");
  threads_.reserve(count - 1);
  for (std::size_t lane = 1; lane < count; ++lane) threads_.emplace_back([this, lane] { serve(lane); });
}

DecodeLanes::~DecodeLanes() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void DecodeLanes::serve(std::size_t lane) noexcept {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(std::size_t)>* work = nullptr;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      work = work_;
    }
    std::exception_ptr error;
    try {
      (*work)(lane);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      errors_[lane] = error;
      --running_;
    }
    finished_.notify_all();
  }
}

void DecodeLanes::run(const std::function<void(std::size_t lane)>& work) {
  {
    std::lock_guard lock(mutex_);
    work_ = &work;
    running_ = threads_.size();
    for (std::exception_ptr& error : errors_) error = nullptr;
    ++generation_;
  }
  start_.notify_all();
  try {
    work(0);
  } catch (...) {
    errors_[0] = std::current_exception();  // lane 0's slot is this thread's alone
  }
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return running_ == 0; });
  work_ = nullptr;
  for (const std::exception_ptr& error : errors_)
    if (error) std::rethrow_exception(error);
}

}  // namespace conveyor::cuda
