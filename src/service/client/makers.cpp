#include "src/service/client/makers.h"

#include <algorithm>

#include "conveyor/error.h"
#include "src/service/common/batch_codec.h"
#include "src/service/common/split_dataset.h"

namespace conveyor::service::detail {

// ---- RemoteMaker ----

RemoteMaker::RemoteMaker(const std::string& address, std::uint64_t worker_id, std::size_t stream_index,
                         const LinkOptions& link, const v1::StreamOpen& open, MakerSink& sink)
    : Maker("worker " + address, true),
      address_(address),
      worker_id_(worker_id),
      stream_index_(stream_index),
      sink_(sink) {
  link_ = connect_worker(address, link);
  std::unique_ptr<SplitStream> stream = link_->open(open, *this);
  std::lock_guard lock(mutex_);
  stream_ = std::move(stream);
  sender_->attach(*stream_);  // with the answer to the worker's offer, if it came first
}

RemoteMaker::~RemoteMaker() { stop(); }

void RemoteMaker::make(const Split& part, std::uint64_t first_batch) {
  v1::ClientMessage request;
  request.mutable_split()->set_split(part.index);
  request.mutable_split()->set_first_batch(first_batch);
  std::lock_guard lock(mutex_);
  if (stream_) stream_->send(request);
}

void RemoteMaker::resume() {
  std::lock_guard lock(mutex_);
  if (stream_) stream_->resume();
}

void RemoteMaker::stop() {
  stopped_ = true;
  std::unique_ptr<SplitStream> stream;
  {
    std::lock_guard lock(mutex_);
    stream.swap(stream_);
    sender_->detach();  // frames still held release nothing: the worker's side is over
  }
  stream.reset();  // cancels, and returns once the stream has closed
}

bool RemoteMaker::on_frame(ReceivedFrame frame) {
  if (stopped_) return false;
  // Shared memory is this maker's business: the offer is answered here, and a lent batch's frame goes on
  // with its tensors' slices (the head is read again by the sink: a few microseconds a batch).
  v1::ServerFrame head;
  try {
    head = FrameReader(frame.slices).head();
  } catch (const InvalidArgument&) {
    return sink_.frame(*this, std::move(frame));  // the sink reports the damage
  }
  if (head.has_shared_memory()) {
    accept_shared_memory(head.shared_memory());
    return true;
  }
  if (head.has_batch() && head.batch().has_lent()) {
    try {
      frame = with_lent_tensors(head.batch(), std::move(frame));
    } catch (const InvalidArgument& error) {
      sink_.lost(*this, std::make_exception_ptr(
                            ServiceError(ServiceError::Kind::malformed, name() + ": " + error.what())));
      return false;
    }
  }
  return sink_.frame(*this, std::move(frame));
}

void RemoteMaker::accept_shared_memory(const v1::SharedMemoryOffer& offer) {
  v1::ClientMessage answer;
  try {
    region_ = std::make_shared<const MappedRegion>(offer.path(), offer.nonce(), offer.bytes());
    answer.mutable_shared_memory()->set_mapped(true);
  } catch (const Error& error) {  // another host, or a region this process may not open: the socket it is
    answer.mutable_shared_memory()->set_mapped(false);
    answer.mutable_shared_memory()->set_reason(error.what());
  }
  sender_->send(answer);
}

ReceivedFrame RemoteMaker::with_lent_tensors(const v1::BatchHeader& header, ReceivedFrame frame) {
  if (!region_) throw InvalidArgument("a batch in shared memory that was never offered");
  // Keeps the region mapped and, when the sink lets the frame go (decoded, or dropped), gives the batch back.
  struct Lent {
    std::shared_ptr<void> received;
    std::shared_ptr<const MappedRegion> region;
    std::shared_ptr<StreamSender> sender;
    std::uint64_t id = 0;
    ~Lent() {
      v1::ClientMessage release;
      release.mutable_release()->add_lent(id);
      sender->send(release);
    }
  };
  for (const std::span<const std::byte>& tensor : lent_tensors(header, *region_)) {
    frame.slices.push_back(tensor);
    frame.shared_bytes += tensor.size();
  }
  auto lent = std::make_shared<Lent>();  // filled in place: a temporary's end would release the batch
  lent->received = std::move(frame.owner);
  lent->region = region_;
  lent->sender = sender_;
  lent->id = header.lent().id();
  frame.owner = std::move(lent);
  return frame;
}

void RemoteMaker::on_closed(std::exception_ptr error) {
  if (stopped_) return;  // this side's own stop: nothing to report
  if (!error)
    error = std::make_exception_ptr(
        ServiceError(ServiceError::Kind::unavailable, "worker " + address_ + " ended the stream"));
  sink_.lost(*this, error);
}

// ---- LocalMaker ----

LocalMaker::LocalMaker(std::string name, Settings settings, MakerSink& sink)
    : Maker(std::move(name), false), settings_(std::move(settings)), sink_(sink) {}

LocalMaker::~LocalMaker() { stop(); }

void LocalMaker::make(const Split& part, std::uint64_t first_batch) {
  std::list<Runner> finished;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    runners_.remove_if([&](Runner& r) {
      if (r.done) finished.push_back(Runner{std::move(r.thread), true});
      return r.done;
    });
    Runner& runner = runners_.emplace_back();
    runner.thread = std::thread([this, part, first_batch, &runner] { run(part, first_batch, &runner); });
  }
  for (Runner& r : finished) r.thread.join();
}

void LocalMaker::stop() {
  std::list<Runner> runners;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (BatchIterator* it : running_) it->cancel();
    runners.swap(runners_);
  }
  room_.notify_all();
  for (Runner& r : runners) r.thread.join();
}

void LocalMaker::delivered(std::uint64_t split) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = waiting_.find(split); it != waiting_.end() && it->second > 0 && --it->second == 0)
      waiting_.erase(it);
  }
  room_.notify_all();
}

void LocalMaker::run(Split part, std::uint64_t first_batch, Runner* runner) noexcept {
  struct Done {
    LocalMaker& maker;
    Runner* runner;
    ~Done() {
      std::lock_guard lock(maker.mutex_);
      runner->done = true;
    }
  } done{*this, runner};
  try {
    const BatchedDataset batches = split_batches(settings_.chain, settings_.seed, settings_.geometry,
                                                 settings_.consumer, part, settings_.where);
    BatchIterator it = batches.begin();
    {
      std::lock_guard lock(mutex_);
      running_.push_back(&it);
      if (stopping_) it.cancel();
    }
    struct Forget {
      LocalMaker& maker;
      BatchIterator* it;
      ~Forget() {
        std::lock_guard lock(maker.mutex_);
        std::erase(maker.running_, it);
      }
    } forget{*this, &it};
    std::uint64_t made = 0;
    for (;;) {
      {
        // Its pool has room for most_waiting batches besides the consumer's: wait while that many wait.
        std::unique_lock lock(mutex_);
        room_.wait(lock, [&] { return stopping_ || waiting_[part.index] < settings_.most_waiting; });
        if (stopping_) return;
      }
      std::optional<Batch> batch = it.next();
      if (!batch) break;
      {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        ++waiting_[part.index];
      }
      sink_.batch(*this, part.index, first_batch + made, std::move(*batch));
      ++made;
    }
    sink_.split_end(*this, part.index, first_batch + made);
  } catch (const PipelineError&) {
    sink_.split_failed(*this, std::current_exception());
  } catch (...) {
    sink_.lost(*this, std::current_exception());
  }
}

}  // namespace conveyor::service::detail
