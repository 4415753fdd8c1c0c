#include "src/device/lookahead.h"

#include <utility>

#include "conveyor/error.h"
#include "src/pipeline/worker_affinity.h"

namespace conveyor::detail {

Lookahead::Lookahead(std::shared_ptr<FeederBackend> backend, BatchIterator batches, std::size_t ahead,
                     Thread thread)
    : backend_(std::move(backend)),
      batches_(std::move(batches)),
      ahead_(ahead),
      thread_options_(std::move(thread)) {
  if (ahead_ == 0) throw InvalidArgument("DeviceFeeder: the staging thread needs room for one batch ahead");
  handed_state_ = state_now();
  thread_ = std::thread([this] { run(); });
}

Lookahead::~Lookahead() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  batches_.cancel();  // a thread waiting for the pipeline gets the end
  thread_.join();
  // staged_ releases its batches here; batches_ stops its pipeline after that.
}

void Lookahead::run() noexcept {
  // The thread does what the pipeline's workers do, nvJPEG's host work included: on their CPUs.
  pin_this_thread(thread_options_.cpus);
  std::optional<ProgressWatch::Member> member;
  try {
    member.emplace(thread_options_.watch, thread_options_.name);
  } catch (...) {
    // Not watched: a report will miss this thread's line, the staging goes on.
  }
  for (;;) {
    {
      const ProgressWatch::Doing doing("waiting for the consumer to take a staged batch");
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || staged_.size() < ahead_; });
      if (stopping_) break;
    }
    try {
      std::optional<Batch> batch;
      {
        const ProgressWatch::Doing doing("waiting for the pipeline's next batch");
        batch = batches_.next();
      }
      if (!batch) break;
      auto state = state_now();
      {
        const ProgressWatch::Doing doing("waiting for the consumer to give a ring slot back");
        if (!wait_for_a_slot()) break;
      }
      const ProgressWatch::Doing doing("staging batch", static_cast<long long>(batch->sequence()));
      DeviceBatch staged = backend_->stage(std::move(*batch), {.hand_over = false});
      std::lock_guard lock(mutex_);
      staged_.emplace_back(Staged{std::move(staged), std::move(state)});
    } catch (...) {
      std::lock_guard lock(mutex_);
      staged_.emplace_back(std::current_exception());
      break;
    }
    changed_.notify_all();
  }
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
  }
  changed_.notify_all();
}

bool Lookahead::wait_for_a_slot() {
  // The consumer may still hold the batches before the one it asks for next (a Python loop keeps the last
  // batch's tensors until next() returns): wait until it lets one go. The wait is in short steps so that
  // stopping is seen; next() reports a consumer that holds them all.
  HeldSlots& slots = backend_->slots();
  if (slots.wait_for_free(std::chrono::milliseconds(0))) return true;
  {
    std::lock_guard lock(mutex_);
    waiting_for_slot_ = true;
  }
  changed_.notify_all();
  bool free = false;
  while (!free) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) break;
    }
    free = slots.wait_for_free(std::chrono::milliseconds(2));
  }
  {
    std::lock_guard lock(mutex_);
    waiting_for_slot_ = false;
  }
  return free;
}

std::variant<IteratorState, std::exception_ptr> Lookahead::state_now() const noexcept {
  try {
    return batches_.state();
  } catch (...) {
    return std::current_exception();
  }
}

IteratorState Lookahead::state() const {
  if (const auto* error = std::get_if<std::exception_ptr>(&handed_state_)) std::rethrow_exception(*error);
  return std::get<IteratorState>(handed_state_);
}

std::optional<DeviceBatch> Lookahead::next() {
  std::variant<Staged, std::exception_ptr> item;
  {
    const ProgressWatch::Doing doing("waiting for the feeder's staging thread");
    std::unique_lock lock(mutex_);
    // Nothing staged while the thread waits for a slot and every slot is held: they are all the consumer's
    // (staged batches would be in staged_), and waiting would never end.
    const auto consumer_holds_all = [&] {
      return waiting_for_slot_ && backend_->slots().held() == backend_->slots().size();
    };
    changed_.wait(lock, [&] { return !staged_.empty() || finished_ || consumer_holds_all(); });
    if (staged_.empty() && !finished_) throw_all_slots_held(backend_->slots().size());
    if (staged_.empty()) return std::nullopt;
    item = std::move(staged_.front());
    staged_.pop_front();
  }
  changed_.notify_all();  // room for the thread to stage another
  if (auto* error = std::get_if<std::exception_ptr>(&item)) std::rethrow_exception(*error);
  Staged& staged = std::get<Staged>(item);
  backend_->hand_over(staged.batch);
  handed_state_ = std::move(staged.state);
  return std::move(staged.batch);
}

}  // namespace conveyor::detail
