#include "src/service/worker/worker_stream.h"

#include <algorithm>
#include <chrono>

#include "conveyor/error.h"
#include "src/service/common/batch_codec.h"
#include "src/service/common/protocol.h"
#include "src/service/common/split_dataset.h"

namespace conveyor::service::detail {
namespace {

using Clock = std::chrono::steady_clock;

v1::ServerFrame end_of(std::uint64_t split, std::uint64_t batches, const PipelineStats& stats) {
  v1::ServerFrame frame;
  v1::SplitEnd& end = *frame.mutable_end();
  end.set_split(split);
  end.set_batches(batches);
  end.set_skipped(stats.skipped);
  for (const auto& [reason, count] : stats.skip_reasons)
    end.add_skip_reasons(std::to_string(count) + " x " + reason);
  return frame;
}

v1::ServerFrame failure_of(std::uint64_t split, const PipelineError& error) {
  v1::ServerFrame frame;
  v1::SplitFailed& failed = *frame.mutable_failed();
  failed.set_split(split);
  failed.set_path(error.path());
  failed.set_stage(error.stage());
  failed.set_reason(error.reason());
  return frame;
}

}  // namespace

WorkerStream::WorkerStream(const StreamContext& context, v1::StreamOpen open, std::shared_ptr<FrameSink> sink)
    : context_(context), open_(std::move(open)), sink_(std::move(sink)) {
  context_.tally.streams.fetch_add(1);
  thread_ = std::thread([this] { run(); });
}

WorkerStream::~WorkerStream() {
  on_closed();
  if (thread_.joinable()) thread_.join();
  context_.tally.streams.fetch_sub(1);
}

void WorkerStream::on_request(const v1::SplitRequest& split) {
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(split);
  }
  wake_.notify_all();
}

void WorkerStream::on_shared_memory(const v1::SharedMemoryAnswer& answer) {
  {
    std::lock_guard lock(mutex_);
    shared_answered_ = true;
    shared_mapped_ = answer.mapped();  // the region itself is only ever touched by the stream's thread
  }
  wake_.notify_all();
}

void WorkerStream::on_release(const v1::Release& release) {
  std::vector<std::shared_ptr<const void>> released;
  {
    std::lock_guard lock(mutex_);
    for (const std::uint64_t id : release.lent())
      if (const auto it = lent_.find(id); it != lent_.end()) {
        released.push_back(std::move(it->second));
        lent_.erase(it);
      }
  }
  // Outside the lock: the batches' memory goes back to their pools (or, theirs gone, to the region).
}

void WorkerStream::on_closed() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    for (BatchIterator* it : iterators_) it->cancel();
  }
  wake_.notify_all();
}

std::optional<v1::SplitRequest> WorkerStream::next_request(bool wait) {
  std::unique_lock lock(mutex_);
  if (wait) wake_.wait(lock, [&] { return closed_ || !requests_.empty(); });
  if (closed_ || requests_.empty()) return std::nullopt;
  v1::SplitRequest request = requests_.front();
  requests_.pop_front();
  return request;
}

void WorkerStream::run() noexcept {
  try {
    const std::string& token = open_.caller().token();
    std::shared_ptr<const JobContext> job;
    try {
      if (open_.caller().protocol() != kProtocolVersion)
        throw ServiceError(ServiceError::Kind::refused,
                           "this worker speaks " + describe_protocol(kProtocolVersion, "") +
                               ", the trainer " +
                               describe_protocol(open_.caller().protocol(), open_.caller().version()));
      job = context_.jobs.job(open_.job_id(), token, open_.fingerprint());
      if (open_.consumer() >= job->definition.geometry().consumers())
        throw ServiceError(ServiceError::Kind::refused,
                           "consumer " + std::to_string(open_.consumer()) + " of a job of " +
                               std::to_string(job->definition.geometry().consumers()));
    } catch (const ServiceError& error) {
      context_.tally.refused.fetch_add(1);
      sink_->fail(error);
      finished_ = true;
      return;
    }
    offer_shared_memory();
    serve(*job);
  } catch (const ServiceError& error) {
    sink_->fail(error);
  } catch (const std::exception& error) {
    sink_->fail(ServiceError(ServiceError::Kind::failed, std::string("worker: ") + error.what()));
  }
  finished_ = true;
}

WorkerStream::Running WorkerStream::start(const JobContext& job, const v1::SplitRequest& request) {
  Running running;
  running.request = request;
  running.split = job.plan.remainder(request.split(), request.first_batch());
  if (!running.split)
    throw ServiceError(ServiceError::Kind::malformed,
                       "split " + std::to_string(request.split()) + " from batch " +
                           std::to_string(request.first_batch()) + " is not in the job");
  PipelineOptionChanges where = context_.where;
  if (shared_) {
    // Its batches in the region; those the trainer holds before releasing them count as held.
    where.host_memory = shared_;
    where.held_batches = where.held_batches.value_or(1) + open_.shared_memory_frames();
  }
  const BatchedDataset batches =
      split_batches(job.chain, job.definition.chain().seed(), job.definition.geometry(), open_.consumer(),
                    *running.split, where);
  running.batches = std::make_unique<BatchIterator>(batches.begin());  // its pipeline starts working now
  std::lock_guard lock(mutex_);
  iterators_.push_back(running.batches.get());
  if (closed_) running.batches->cancel();
  return running;
}

void WorkerStream::serve(const JobContext& job) {
  std::optional<Running> current, ahead;
  // However serve() ends (the stream closed, an error), the splits' iterators leave iterators_ before they
  // are destroyed: on_closed() (from gRPC's thread or the destructor) must never cancel one that is gone.
  struct Forget {
    WorkerStream& stream;
    std::optional<Running>& current;
    std::optional<Running>& ahead;
    ~Forget() {
      std::lock_guard lock(stream.mutex_);
      for (const std::optional<Running>* running : {&current, &ahead})
        if (*running && (*running)->batches) std::erase(stream.iterators_, (*running)->batches.get());
    }
  } const forget{*this, current, ahead};
  for (;;) {
    if (!current) {
      if (ahead) {
        current = std::move(ahead);
        ahead.reset();
      } else if (const std::optional<v1::SplitRequest> request = next_request(true)) {
        current = start(job, *request);
      } else {
        return;  // closed
      }
    }
    // The next split's pipeline runs while this one is sent (into its own pool, bounded by its prefetch).
    if (!ahead)
      if (const std::optional<v1::SplitRequest> request = next_request(false)) ahead = start(job, *request);
    send_split(*current);
    {
      std::lock_guard lock(mutex_);
      std::erase(iterators_, current->batches.get());
      if (closed_) return;
    }
    current.reset();
  }
}

void WorkerStream::send_split(Running& running) {
  const auto started = Clock::now();
  const std::uint64_t split = running.request.split();
  std::uint64_t sent = 0;
  std::optional<v1::ServerFrame> last;
  try {
    while (std::optional<Batch> batch = running.batches->next()) {
      if (!send_batch(std::move(*batch), split, running.request.first_batch() + sent)) return;
      ++sent;
    }
    last = end_of(split, running.request.first_batch() + sent, running.batches->stats());
  } catch (const PipelineError& error) {
    last =
        failure_of(split, error);  // the chain's own failure (on_error = fail): no other worker does better
  }
  context_.tally.elements.fetch_add(running.batches->stats().elements_out);
  context_.tally.splits.fetch_add(1);
  context_.tally.busy_ns.fetch_add(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started).count()));
  sink_->send(encode_frame(*last));
}

void WorkerStream::offer_shared_memory() {
  if (open_.shared_memory_frames() == 0 || context_.shared_memory_bytes == 0) return;
  std::shared_ptr<SharedRegion> region;
  try {
    region = std::make_shared<SharedRegion>(context_.shared_memory_bytes);
  } catch (const Error&) {
    return;  // no memfd on this host: every batch through the socket (the trainer's figures show it)
  }
  shared_ = std::make_shared<SharedRegionMemory>(region, context_.where.host_memory.value_or(nullptr));
  v1::ServerFrame frame;
  v1::SharedMemoryOffer& offer = *frame.mutable_shared_memory();
  offer.set_path(region->path());
  offer.set_nonce(region->nonce());
  offer.set_bytes(region->bytes());
  if (!sink_->send(encode_frame(frame))) return;
  // The answer comes back in a round trip: waiting for it sends every batch one way (a trainer that does
  // not answer in time gets them through the socket).
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, kAnswerTimeout, [&] { return closed_ || shared_answered_; });
}

bool WorkerStream::send_batch(Batch batch, std::uint64_t split, std::uint64_t batch_in_split) {
  std::optional<SharedPlacement> placement;
  if (shared_ && shared_mapped_) placement.emplace(SharedPlacement{*shared_, next_lent_});
  Frame frame = encode_batch(batch, split, batch_in_split, placement ? &*placement : nullptr);
  const std::size_t bytes = frame.bytes();
  if (frame.lent) {
    // Lent before it is sent: the trainer's release may come back before send() returns.
    std::lock_guard lock(mutex_);
    lent_.emplace(next_lent_++, std::move(frame.keep_alive));
    context_.tally.bytes_lent.fetch_add(frame.lent_bytes);
  }
  // The frame (or the lent table) keeps the memory until the network (or the trainer) is done with it.
  batch = Batch();
  if (!sink_->send(std::move(frame))) return false;
  context_.tally.batches.fetch_add(1);
  context_.tally.bytes_sent.fetch_add(bytes);
  return true;
}

}  // namespace conveyor::service::detail
