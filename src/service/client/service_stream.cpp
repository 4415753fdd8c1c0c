// The consumer's side of ServiceStream, what makers report, and the decoding thread (see service_stream.h).
#include "src/service/client/service_stream.h"

#include <algorithm>

#include "conveyor/error.h"
#include "src/service/client/received_memory.h"
#include "src/service/common/batch_codec.h"
#include "src/service/common/split_dataset.h"

namespace conveyor::service::detail {
namespace {

// A worker's frames waiting to be decoded, per stream: enough to keep the decoder busy without buffering much
// (non-deterministic); in deterministic order every frame of the splits a worker has in hand, so that no
// worker ever waits on flow control for a split the consumer cannot take yet while the one it needs is
// elsewhere (the cost of that mode: up to that much memory).
std::size_t receive_depth(const JobInfo& job) {
  if (!job.options.deterministic) return 2;
  return job.options.splits_per_worker * job.definition.geometry().split_batches() + 1;
}

}  // namespace

ServiceStream::ServiceStream(std::shared_ptr<const JobInfo> job, BatchBuffers buffers,
                             const PipelineOptions& options, std::size_t prefetch,
                             const BatchStreamPosition& start)
    : job_(std::move(job)),
      buffers_(std::move(buffers)),
      options_(options),
      prefetch_(prefetch),
      deterministic_(job_->options.deterministic),
      receive_depth_(receive_depth(*job_)),
      dispatcher_link_(connect_dispatcher(job_->dispatcher, job_->link)),
      ledger_(plan_of(job_->definition.geometry(), job_->definition.description().source_size()), start),
      job_id_(job_->definition.job_id()),
      sequence_(start.batches),
      heap_note_(job_->options.keep_received_memory ? keep_received_memory() : std::string{}) {
  control_ = std::thread([this] { control_loop(); });
  decoder_ = std::thread([this] { decode_loop(); });
}

ServiceStream::~ServiceStream() {
  cancel();
  control_.join();
  decoder_.join();
  std::vector<std::unique_ptr<Maker>> makers;
  {
    std::lock_guard lock(mutex_);
    makers.swap(makers_);
    for (auto& m : retired_) makers.push_back(std::move(m));
    retired_.clear();
  }
  for (auto& m : makers) m->stop();  // outside the lock: their last reports take it
  std::lock_guard lock(mutex_);
  arrivals_.clear();  // batches of local pools and frames of gRPC's, before the makers go
}

void ServiceStream::cancel() noexcept {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  ready_cv_.notify_all();
  decode_cv_.notify_all();
  control_cv_.notify_all();
}

// ---- the consumer ----

std::optional<Batch> ServiceStream::next() {
  std::unique_lock lock(mutex_);
  const Clock::time_point asked = Clock::now();
  bool waited = false;
  for (;;) {
    if (error_) std::rethrow_exception(error_);
    if (cancelled_) return std::nullopt;
    // Deterministic: the lowest split in hand, its next batch. Otherwise the lowest split with a batch ready.
    std::optional<std::uint64_t> chosen;
    if (deterministic_) {
      if (const std::optional<SplitLedger::Work> head = ledger_.head())
        if (const auto it = arrivals_.find(head->split);
            it != arrivals_.end() && !it->second.empty() && it->second.front().batch)
          chosen = head->split;
    } else {
      for (const auto& [split, queue] : arrivals_)
        if (!queue.empty() && queue.front().batch) {
          chosen = split;
          break;
        }
    }
    if (chosen) {
      std::deque<Arrival>& queue = arrivals_[*chosen];
      Arrival arrival = std::move(queue.front());
      queue.pop_front();
      if (queue.empty()) arrivals_.erase(*chosen);
      Batch batch = std::move(*arrival.batch);
      ledger_.deliver(*chosen, batch.size());
      if (arrival.maker->figures.batches++ == 0)
        arrival.maker->figures.first_batch_seconds =
            std::chrono::duration<double>(Clock::now() - started_).count();
      arrival.maker->figures.elements += batch.size();
      if (!arrival.maker->remote()) static_cast<LocalMaker*>(arrival.maker)->delivered(*chosen);
      if (waited) {
        ++consumer_waits_;
        waited_ += Clock::now() - asked;
      }
      control_cv_.notify_all();  // a split may be done: room for the next
      // Deterministic: the frame to decode is the consumer's next in order, which this delivery may have
      // just made so (a worker's split that arrived whole while the consumer was on an earlier one).
      if (deterministic_) decode_cv_.notify_one();
      return std::move(batch).renumbered(sequence_++);
    }
    if (ledger_.finished()) return std::nullopt;
    waited = true;
    ready_cv_.wait(lock);
  }
}

BatchStreamPosition ServiceStream::position() const {
  std::lock_guard lock(mutex_);
  return ledger_.position();
}

void ServiceStream::add_stats(PipelineStats& stats) const {
  std::lock_guard lock(mutex_);
  const Clock::time_point now = Clock::now();
  // One part per name: a worker lost and joined again is one worker, and so are its streams
  // (ServiceOptions::streams_per_worker), busy at once: its busy time is their mean.
  const double streams = static_cast<double>(std::max<std::size_t>(job_->options.streams_per_worker, 1));
  auto add = [&](const Maker& m) {
    SourcePart part = m.figures;
    if (m.busy_since != Clock::time_point{})
      part.busy_seconds += std::chrono::duration<double>(now - m.busy_since).count();
    if (m.remote()) part.busy_seconds /= streams;
    for (SourcePart& seen : stats.source_parts)
      if (seen.name == part.name) {
        seen.batches += part.batches;
        seen.elements += part.elements;
        seen.wire_bytes += part.wire_bytes;
        seen.shared_bytes += part.shared_bytes;
        seen.busy_seconds += part.busy_seconds;
        seen.failures += part.failures;
        if (part.first_batch_seconds > 0 &&
            (seen.first_batch_seconds == 0 || part.first_batch_seconds < seen.first_batch_seconds))
          seen.first_batch_seconds = part.first_batch_seconds;  // its first stream's
        return;
      }
    stats.source_parts.push_back(std::move(part));
  };
  for (const auto& m : makers_) add(*m);
  for (const auto& m : retired_) add(*m);
  stats.consumer_waits = consumer_waits_;
  stats.consumer_wait_ns = static_cast<std::uint64_t>(waited_.count());
  stats.queue.capacity = prefetch_;
  for (const std::string& line : notes_) stats.source_note += (stats.source_note.empty() ? "" : "\n") + line;
  if (!heap_note_.empty()) stats.source_note += (stats.source_note.empty() ? "" : "\n") + heap_note_;
}

// ---- what makers report ----

bool ServiceStream::frame(Maker& maker, ReceivedFrame frame) {
  FrameReader reader(frame.slices);
  v1::ServerFrame head;
  try {
    head = reader.head();
  } catch (const InvalidArgument& error) {
    lost(maker, std::make_exception_ptr(
                    ServiceError(ServiceError::Kind::malformed, maker.name() + ": " + error.what())));
    return false;
  }
  std::unique_lock lock(mutex_);
  maker.last_heard = Clock::now();
  if (maker.dead || cancelled_) return false;
  switch (head.kind_case()) {
    case v1::ServerFrame::kBatch: {
      const std::uint64_t split = head.batch().split(), index = head.batch().batch_in_split();
      if (!ledger_.receive(split, index, &maker)) {
        lock.unlock();
        lost(maker,
             std::make_exception_ptr(ServiceError(
                 ServiceError::Kind::malformed, maker.name() + ": batch " + std::to_string(index) +
                                                    " of split " + std::to_string(split) + " out of turn")));
        return false;
      }
      maker.figures.wire_bytes += frame.bytes;
      maker.figures.shared_bytes += frame.shared_bytes;
      Arrival arrival;
      arrival.batch_in_split = index;
      arrival.maker = &maker;
      arrival.header = head.batch();
      arrival.frame = std::move(frame);
      arrivals_[split].push_back(std::move(arrival));
      // The reader's position (after the head) is found again at decoding: the head's length prefix.
      decode_cv_.notify_one();
      const bool room = frames_waiting(maker) < receive_depth_;
      maker.paused = !room;
      return room;
    }
    case v1::ServerFrame::kEnd: {
      if (!ledger_.end(head.end().split(), head.end().batches(), &maker)) {
        lock.unlock();
        lost(maker, std::make_exception_ptr(ServiceError(ServiceError::Kind::malformed,
                                                         maker.name() + ": split " +
                                                             std::to_string(head.end().split()) +
                                                             " ended after batches it did not send")));
        return false;
      }
      if (ledger_.assigned_to(&maker) == 0 && maker.busy_since != Clock::time_point{}) {
        maker.figures.busy_seconds += std::chrono::duration<double>(Clock::now() - maker.busy_since).count();
        maker.busy_since = {};
      }
      ready_cv_.notify_all();
      control_cv_.notify_all();
      return true;
    }
    case v1::ServerFrame::kFailed: {
      const v1::SplitFailed& f = head.failed();
      error_ = std::make_exception_ptr(PipelineError(f.path(), f.stage(), f.reason()));
      ready_cv_.notify_all();
      return true;
    }
    case v1::ServerFrame::kSharedMemory:  // the maker answers offers: none reaches the stream
    case v1::ServerFrame::KIND_NOT_SET:
      break;
  }
  lock.unlock();
  lost(maker, std::make_exception_ptr(
                  ServiceError(ServiceError::Kind::malformed, maker.name() + ": an empty frame")));
  return false;
}

void ServiceStream::batch(Maker& maker, std::uint64_t split, std::uint64_t batch_in_split, Batch batch) {
  std::lock_guard lock(mutex_);
  if (maker.dead || cancelled_ || !ledger_.receive(split, batch_in_split, &maker)) return;
  Arrival arrival;
  arrival.batch_in_split = batch_in_split;
  arrival.maker = &maker;
  arrival.batch = std::move(batch);
  arrivals_[split].push_back(std::move(arrival));
  ready_cv_.notify_all();
}

void ServiceStream::split_end(Maker& maker, std::uint64_t split, std::uint64_t batches) {
  std::lock_guard lock(mutex_);
  if (maker.dead || cancelled_) return;
  ledger_.end(split, batches, &maker);
  if (ledger_.assigned_to(&maker) == 0 && maker.busy_since != Clock::time_point{}) {
    maker.figures.busy_seconds += std::chrono::duration<double>(Clock::now() - maker.busy_since).count();
    maker.busy_since = {};
  }
  ready_cv_.notify_all();
  control_cv_.notify_all();
}

void ServiceStream::split_failed(Maker& /*maker*/, std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (!error_) error_ = error;
  ready_cv_.notify_all();
}

// ---- decoding ----

std::size_t ServiceStream::frames_waiting(const Maker& maker) const {
  std::size_t n = 0;
  for (const auto& [split, queue] : arrivals_)
    for (const Arrival& a : queue) n += a.maker == &maker && a.header ? 1 : 0;
  return n;
}

std::pair<std::uint64_t, ServiceStream::Arrival*> ServiceStream::arrival_to_decode() {
  if (!deterministic_) {
    // Any split's first frame not decoded yet: every batch decoded is one the consumer can take.
    for (auto& [split, queue] : arrivals_)
      for (Arrival& a : queue)
        if (a.header && !a.decoding) return {split, &a};
    return {0, nullptr};
  }
  // Deterministic: only the consumer's next batch in order, or the pool could fill with batches it cannot
  // take yet while the one it waits for has no buffer. The order is the ledger's (splits in hand, lowest
  // first), not the arrivals' (a split in hand with nothing arrived yet is a gap there).
  for (const std::uint64_t split : ledger_.splits()) {
    const std::optional<SplitLedger::Progress> p = ledger_.progress(split);
    std::uint64_t expected = p->delivered;
    if (const auto it = arrivals_.find(split); it != arrivals_.end())
      for (Arrival& a : it->second) {
        if (a.batch_in_split != expected || a.decoding) return {0, nullptr};  // a gap, or being decoded
        if (a.header) return {split, &a};
        ++expected;
      }
    if (expected < p->batches) return {0, nullptr};  // the rest of this split has not arrived
  }
  return {0, nullptr};
}

void ServiceStream::decode_loop() noexcept {
  for (;;) {
    // A buffer first (this may wait for the consumer to give one back), then the frame to write into it.
    std::optional<BatchWriter> writer = buffers_.acquire();
    if (!writer) return;  // the iterator is going
    std::unique_lock lock(mutex_);
    std::pair<std::uint64_t, Arrival*> pick;
    decode_cv_.wait(lock, [&] {
      if (cancelled_) return true;
      pick = arrival_to_decode();
      return pick.second != nullptr;
    });
    if (cancelled_) return;
    Arrival& arrival = *pick.second;
    const std::uint64_t split = pick.first;
    arrival.decoding = true;
    const v1::BatchHeader header = *arrival.header;
    FrameReader reader(arrival.frame.slices);
    lock.unlock();
    std::optional<Batch> batch;
    std::exception_ptr damaged;
    try {
      (void)reader.head();  // past the head, to the tensors
      batch = decode_batch(header, reader, std::move(*writer), buffers_.layout(), 0);
    } catch (const std::exception& error) {
      damaged = std::make_exception_ptr(
          ServiceError(ServiceError::Kind::malformed, arrival.maker->name() + ": " + error.what()));
    }
    ReceivedFrame decoded;  // let go once the lock is: a lent batch's release is a write on its stream
    lock.lock();
    Maker* maker = arrival.maker;
    bool resume = false;
    if (batch) {
      arrival.batch = std::move(batch);
      arrival.header.reset();
      decoded = std::move(arrival.frame);  // gRPC's memory, or the worker's lent batch, goes back below
      arrival.frame = {};
      arrival.decoding = false;
      resume = maker->paused && !maker->dead && frames_waiting(*maker) < receive_depth_;
      if (resume) maker->paused = false;
      ready_cv_.notify_all();
    } else {
      // A damaged frame: it and every later one of its split are made again elsewhere.
      ++malformed_;
      std::deque<Arrival>& queue = arrivals_[split];
      const std::uint64_t from = arrival.batch_in_split;
      std::erase_if(queue, [&](const Arrival& a) { return a.batch_in_split >= from; });
      if (queue.empty()) arrivals_.erase(split);
      ledger_.rewind(split, from);
      lock.unlock();
      lost(*maker, damaged);
      continue;
    }
    lock.unlock();
    if (resume) maker->resume();
  }
}

}  // namespace conveyor::service::detail
