#include "src/train/distributed/collective_watch.h"

#include <cstdio>
#include <cstdlib>
#include <future>
#include <optional>
#include <utility>

namespace conveyor::train {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds(Clock::duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(d).count());
  return text;
}

}  // namespace

CollectiveWatch::CollectiveWatch(NcclHandle& handle, std::chrono::milliseconds limit,
                                 std::chrono::milliseconds abort_grace,
                                 std::chrono::milliseconds poll_interval)
    : handle_(handle),
      limit_(limit),
      abort_grace_(abort_grace),
      poll_interval_(poll_interval),
      last_completed_(Clock::now()),
      alarm_(limit, [this](const std::string& what, Clock::duration blocked) {
        abort_stuck(
            handle_.where() + ": the watch's " + what + " did not return for " + seconds(blocked) +
            ": the GPU is held by collectives that made no progress (another rank stopped taking part), "
            "and the driver keeps the watch waiting behind it");
      }) {
  thread_ = std::thread([this] { run(); });
}

CollectiveWatch::~CollectiveWatch() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CollectiveWatch::mark(cudaStream_t stream, std::string what) {
  // The CUDA calls outside the lock: the watch thread holds it only between its own CUDA calls.
  std::optional<cuda::Event> event;
  {
    const std::lock_guard lock(mutex_);
    if (!spare_.empty()) {
      event.emplace(std::move(spare_.back()));
      spare_.pop_back();
    }
  }
  if (!event) event.emplace();
  event->record(stream);
  const std::lock_guard lock(mutex_);
  if (pending_.empty()) last_completed_ = Clock::now();  // the clock starts with the first point pending
  pending_.push_back({std::move(*event), Clock::now(), std::move(what)});
}

std::string CollectiveWatch::inspect() {
  {
    const BlockedCallAlarm::Call call = alarm_.call("ncclCommGetAsyncError");
    if (std::string error = handle_.async_error(); !error.empty())
      return handle_.where() + ": NCCL reports " + error + ": a rank left the job";
  }
  for (;;) {
    Point* oldest = nullptr;
    {
      const std::lock_guard lock(mutex_);
      if (pending_.empty()) return "";
      oldest = &pending_.front();  // only this thread pops; mark()'s push_back keeps references valid
    }
    cudaError_t status = cudaSuccess;
    {
      const BlockedCallAlarm::Call call = alarm_.call("cudaEventQuery");
      status = cudaEventQuery(oldest->event.get());
    }
    const std::lock_guard lock(mutex_);
    if (status == cudaErrorNotReady) {
      const Clock::time_point since = std::max(oldest->recorded, last_completed_);
      if (Clock::now() - since <= limit_) return "";
      return handle_.where() + ": the collectives before " + oldest->what + " made no progress for " +
             seconds(Clock::now() - since) +
             ": another rank stopped taking part (it was killed, hangs, or was kept from the collectives for "
             "longer than the timeout)";
    }
    if (status != cudaSuccess)
      return handle_.where() + ": waiting for " + oldest->what + ": " + cudaGetErrorString(status);
    last_completed_ = Clock::now();
    spare_.push_back(std::move(oldest->event));
    pending_.pop_front();
  }
}

void CollectiveWatch::abort_stuck(const std::string& reason) {
  if (decided_.exchange(true)) return;
  std::fprintf(stderr, "conveyor: %s; aborting the communicator\n", reason.c_str());
  std::fflush(stderr);
  if (abort_grace_.count() <= 0) {
    // Its kernels stop; the trainer's next call throws `reason`. (The alarm's thread has no device yet.)
    if (cudaSetDevice(handle_.device()) == cudaSuccess) handle_.abort(reason);
    return;
  }
  const Clock::time_point deadline = Clock::now() + abort_grace_;
  std::promise<void> aborted;
  std::future<void> done = aborted.get_future();
  std::thread aborter([&] {
    // The abort's own thread: the deadline below must hold even when the abort does not return.
    if (cudaSetDevice(handle_.device()) == cudaSuccess) handle_.abort(reason);
    aborted.set_value();
  });
  bool torn_down = false;
  {
    std::unique_lock lock(mutex_);
    torn_down = wake_.wait_until(lock, deadline, [this] { return stop_; });
  }
  if (torn_down && done.wait_until(deadline) == std::future_status::ready) {
    aborter.join();
    return;
  }
  std::fprintf(stderr,
               "conveyor: %s; the rank did not end within %.1f s of aborting the communicator (%s): ending the "
               "process (DataParallelOptions::abort_grace)\n",
               handle_.where().c_str(), std::chrono::duration<double>(abort_grace_).count(),
               done.wait_for(std::chrono::seconds(0)) == std::future_status::ready
                   ? "the abort returned, but the trainer did not tear the communicator down"
                   : "NCCL's abort did not return");
  std::fflush(stderr);
  std::_Exit(1);
}

void CollectiveWatch::run() {
  // Events and NCCL calls from this thread act on the communicator's device.
  if (cudaSetDevice(handle_.device()) != cudaSuccess) return;
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, poll_interval_, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    const std::string reason = inspect();
    if (!reason.empty()) {
      abort_stuck(reason);
      return;
    }
    lock.lock();
  }
}

}  // namespace conveyor::train
