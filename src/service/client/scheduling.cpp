// ServiceStream's control thread: joins the job at the consumer's position, asks the dispatcher for the next
// split, hands splits to makers (the trainer's own cores first, then the workers with the fewest in hand),
// reports to the dispatcher and learns the live workers from it. What it does when something fails is in
// fault_handling.cpp.
#include <unistd.h>

#include <algorithm>

#include "conveyor/error.h"
#include "conveyor/version.h"
#include "src/service/client/service_stream.h"
#include "src/service/common/protocol.h"
#include "src/service/common/split_dataset.h"

namespace conveyor::service::detail {
namespace {

constexpr std::chrono::milliseconds kTick{50};
constexpr std::chrono::milliseconds kHeartbeat{1000};

std::string client_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + " pid " + std::to_string(::getpid());
}

}  // namespace

void ServiceStream::control_loop() noexcept {
  std::unique_lock lock(mutex_);
  while (!cancelled_) {
    lock.unlock();
    try {
      handle_lost_makers();
      bool attach_due = false, beat_due = false;
      {
        std::lock_guard l(mutex_);
        attach_due = reattach_ && Clock::now() - last_heartbeat_ >= kHeartbeat;
        beat_due = !reattach_ && Clock::now() - last_heartbeat_ >= kHeartbeat;
      }
      if (attach_due) attach();
      if (beat_due) heartbeat();
      check_silent_makers();
      fall_back_to_local();
      hand_out();
    } catch (...) {
      std::lock_guard l(mutex_);
      if (!error_) error_ = std::current_exception();
      ready_cv_.notify_all();
    }
    lock.lock();
    if (error_) break;
    control_cv_.wait_for(lock, kTick);
  }
}

void ServiceStream::attach() {
  v1::JoinJobRequest request = job_->join;
  request.set_attach(true);
  {
    std::lock_guard lock(mutex_);
    request.set_cursor(ledger_.cursor());
    last_heartbeat_ = Clock::now();
  }
  v1::JoinJobResponse response;
  try {
    response = dispatcher_link_->join_job(request);
  } catch (const ServiceError& error) {
    if (error.kind() != ServiceError::Kind::unavailable)
      throw;  // refused, unauthorized: the trainer must know
    dispatcher_unreachable(error);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_id_ = response.job().job_id();
    generation_ = response.generation();
    reattach_ = false;
    if (!dispatcher_ok_ && !notes_.empty()) note("dispatcher " + job_->dispatcher + " answers again");
    dispatcher_ok_ = true;
  }
  refresh_makers(response.workers());
}

void ServiceStream::heartbeat() {
  v1::ClientHeartbeatRequest request;
  *request.mutable_caller() = job_->join.caller();
  PipelineStats stats;
  add_stats(stats);
  {
    std::lock_guard lock(mutex_);
    last_heartbeat_ = Clock::now();
    request.set_job_id(job_id_);
    request.set_generation(generation_);
    const BatchStreamPosition p = ledger_.position();
    request.set_batches(p.batches);
    request.set_elements(p.elements);
  }
  request.set_consumer(job_->join.consumer());
  request.set_wait_seconds(static_cast<double>(stats.consumer_wait_ns) / 1e9);
  request.set_note(stats.source_note);
  for (const SourcePart& part : stats.source_parts) {
    v1::PartFigures& f = *request.add_parts();
    f.set_name(part.name);
    f.set_batches(part.batches);
    f.set_elements(part.elements);
    f.set_wire_bytes(part.wire_bytes);
    f.set_shared_bytes(part.shared_bytes);
    f.set_busy_seconds(part.busy_seconds);
    f.set_failures(part.failures);
  }
  try {
    const v1::ClientHeartbeatResponse response = dispatcher_link_->client_heartbeat(request);
    refresh_makers(response.workers());
  } catch (const ServiceError& error) {
    if (error.kind() == ServiceError::Kind::unavailable) return dispatcher_unreachable(error);
    // Taken over, or the dispatcher forgot the job: join again at this consumer's position.
    std::lock_guard lock(mutex_);
    reattach_ = true;
  }
}

void ServiceStream::refresh_makers(const google::protobuf::RepeatedPtrField<v1::WorkerAddress>& workers) {
  std::vector<std::pair<v1::WorkerAddress, std::size_t>> fresh;  // a worker, and which of its streams
  v1::StreamOpen open;
  {
    std::lock_guard lock(mutex_);
    workers_.assign(workers.begin(), workers.end());
    const std::size_t wanted = std::max<std::size_t>(job_->options.streams_per_worker, 1);
    for (const v1::WorkerAddress& w : workers) {
      std::vector<bool> open_streams(wanted, false);
      for (const auto& m : makers_) {
        if (!m->remote() || m->dead) continue;
        const auto& r = static_cast<const RemoteMaker&>(*m);
        if (r.address() == w.address() && r.stream() < wanted) open_streams[r.stream()] = true;
      }
      const auto lost = lost_at_.find(w.address());
      const bool resting = lost != lost_at_.end() && Clock::now() - lost->second < job_->options.timeout / 2;
      if (resting || refused_.contains(w.address())) continue;
      for (std::size_t stream = 0; stream < wanted; ++stream)
        if (!open_streams[stream]) fresh.emplace_back(w, stream);
    }
    *open.mutable_caller() = job_->join.caller();
    open.set_job_id(job_id_);
  }
  open.set_consumer(job_->join.consumer());
  open.set_client(client_name());
  open.set_fingerprint(job_->join.fingerprint());
  // The frames waiting to be decoded, and the one being decoded, are what a worker lends at most.
  if (job_->options.shared_memory)
    open.set_shared_memory_frames(static_cast<std::uint32_t>(receive_depth_ + 1));
  for (const auto& [w, stream] : fresh) {
    auto maker = std::make_unique<RemoteMaker>(w.address(), w.worker_id(), stream, job_->link, open,
                                               static_cast<MakerSink&>(*this));
    std::lock_guard lock(mutex_);
    makers_.push_back(std::move(maker));
  }
}

std::optional<std::uint64_t> ServiceStream::next_split_index() {
  v1::GetSplitRequest request;
  std::uint64_t cursor = 0;
  {
    std::lock_guard lock(mutex_);
    cursor = ledger_.cursor();
    if (ledger_.exhausted()) return std::nullopt;
    // Without the dispatcher the trainer goes on from its own cursor: a split is a pure function of its
    // index, and joining again later tells the dispatcher where this consumer stands.
    if (reattach_ || !dispatcher_ok_) return cursor;
    *request.mutable_caller() = job_->join.caller();
    request.set_job_id(job_id_);
    request.set_generation(generation_);
  }
  request.set_consumer(job_->join.consumer());
  try {
    const v1::GetSplitResponse response = dispatcher_link_->get_split(request);
    if (response.end()) return std::nullopt;
    if (response.split() == cursor) return cursor;
  } catch (const ServiceError& error) {
    if (error.kind() == ServiceError::Kind::unavailable) {
      dispatcher_unreachable(error);
      return cursor;
    }
    if (error.kind() == ServiceError::Kind::unauthorized) throw;
  }
  // The dispatcher's cursor is not this consumer's (it restarted from an older journal entry, or another
  // trainer took the consumer over): join again at this trainer's own position.
  std::lock_guard lock(mutex_);
  reattach_ = true;
  return cursor;
}

Maker* ServiceStream::maker_with_room() {
  // The trainer's own cores first: remote workers make the deficit.
  if (local_ != nullptr && !local_->dead && ledger_.assigned_to(local_) < 2) return local_;
  Maker* best = nullptr;
  std::size_t fewest = job_->options.splits_per_worker;
  for (const auto& m : makers_) {
    if (!m->remote() || m->dead) continue;
    const std::size_t n = ledger_.assigned_to(m.get());
    if (n < fewest) {
      fewest = n;
      best = m.get();
    }
  }
  return best;
}

void ServiceStream::hand_out() {
  for (;;) {
    Maker* maker = nullptr;
    std::optional<SplitLedger::Work> work;
    std::optional<Split> part;
    {
      std::lock_guard lock(mutex_);
      if (cancelled_ || error_) return;
      maker = maker_with_room();
      if (maker == nullptr) return;
      work = ledger_.unassigned();
      if (!work && ledger_.exhausted()) return;
    }
    if (!work) {
      const std::optional<std::uint64_t> index = next_split_index();
      std::lock_guard lock(mutex_);
      if (!index) {
        // The dispatcher says the consumer's epochs are all handed out.
        if (!ledger_.exhausted()) note("the dispatcher ended this consumer's splits before its plan did");
        return;
      }
      if (*index != ledger_.cursor()) continue;
      ledger_.take(*index);
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      if (maker->dead || !ledger_.in_hand(work->split)) continue;
      part = ledger_.plan().remainder(work->split, work->first_batch);
      ledger_.assign(work->split, maker);
      if (maker->busy_since == Clock::time_point{}) maker->busy_since = Clock::now();
      maker->last_heard = Clock::now();
    }
    maker->make(*part, work->first_batch);
  }
}

void ServiceStream::note(const std::string& text) {
  // Under the lock: what the consumer should know, the first time each thing happened, the last few.
  if (std::find(notes_.begin(), notes_.end(), text) != notes_.end()) return;
  notes_.push_back(text);
  if (notes_.size() > 8) notes_.erase(notes_.begin());
}

}  // namespace conveyor::service::detail
