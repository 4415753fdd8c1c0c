// What a trainer's stream does when something fails, end to end. Exactly-once holds through all of it because
// a split is a pure function of (job, consumer, index) and the ledger counts, per split, the batches that
// arrived intact (src/service/client/split_ledger.h).
//
// A worker is lost (killed, its host gone, its stream broken, a frame damaged, or silent too long while it
// has work): every split it had goes back to the ledger as a remainder, from its first batch not received.
// The batches it did deliver stay where they are (in the consumer's hands, or waiting for them), so nothing
// is thrown away and nothing arrives twice: the next maker with room (another worker, or the trainer's own
// cores) makes exactly the rest, bit for bit (Dataset::epoch_range). The lost worker rests for half a timeout
// before it is tried again (a restarted worker comes back under its address); its SourcePart counts the loss.
//
// A worker refuses the job (its data differs from the job's, or it cannot build the chain): it is not asked
// again, and the note says why. A wrong token is the trainer's problem, not the worker's: next() throws it.
//
// The chain itself fails on an element (on_error = fail): every worker would fail the same way, so next()
// throws the PipelineError, as a local pipeline does.
//
// The dispatcher does not answer: the trainer goes on with the workers it knows and takes the next splits
// from its own cursor (the dispatcher only ever hands out the next index); when it answers again, the trainer
// joins again at its position, which becomes the dispatcher's. A dispatcher restarted from its journal has
// the jobs, the workers and every consumer's cursor as it last answered.
//
// No worker can be had: with ServiceOptions::local_fallback the trainer's own cores make the splits (all of
// them, local_threads or every core), and the note says so; once a worker is back, the fallback takes no new
// splits and the workers take over.
#include <algorithm>
#include <thread>

#include "conveyor/error.h"
#include "src/service/client/service_stream.h"

namespace conveyor::service::detail {

void ServiceStream::lost(Maker& maker, std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (maker.dead) return;
  maker.dead = true;
  ++maker.figures.failures;
  if (maker.busy_since != Clock::time_point{}) {
    maker.figures.busy_seconds += std::chrono::duration<double>(Clock::now() - maker.busy_since).count();
    maker.busy_since = {};
  }
  const std::vector<std::uint64_t> again = ledger_.lose(&maker);
  std::string why = "unknown";
  try {
    std::rethrow_exception(error);
  } catch (const ServiceError& e) {
    why = e.what();
    if (e.kind() == ServiceError::Kind::unauthorized && !error_) error_ = error;
    if (e.kind() == ServiceError::Kind::refused && maker.remote())
      refused_[static_cast<RemoteMaker&>(maker).address()] = e.what();
  } catch (const std::exception& e) {
    why = e.what();
    // The trainer's own cores failed outside the chain (no memory, no threads): nothing better to do here.
    if (!maker.remote() && !error_) error_ = error;
  }
  if (maker.remote()) lost_at_[static_cast<RemoteMaker&>(maker).address()] = Clock::now();
  note(maker.name() + " lost (" + why + "); " + std::to_string(again.size()) + " split(s) handed out again");
  ready_cv_.notify_all();
  control_cv_.notify_all();
}

void ServiceStream::handle_lost_makers() {
  std::vector<Maker*> stopping;
  {
    std::lock_guard lock(mutex_);
    for (auto it = makers_.begin(); it != makers_.end();) {
      if (!(*it)->dead) {
        ++it;
        continue;
      }
      if (it->get() == local_) local_ = nullptr;
      stopping.push_back(it->get());
      // Kept until the stream ends: batches it delivered may still wait for the consumer.
      retired_.push_back(std::move(*it));
      it = makers_.erase(it);
    }
  }
  for (Maker* m : stopping) m->stop();  // outside the lock: a stream's last report takes it
}

void ServiceStream::check_silent_makers() {
  std::vector<Maker*> silent;
  {
    std::lock_guard lock(mutex_);
    const Clock::time_point now = Clock::now();
    for (const auto& m : makers_)
      if (m->remote() && !m->dead && !m->paused && ledger_.assigned_to(m.get()) > 0 &&
          now - m->last_heard > job_->options.timeout)
        silent.push_back(m.get());
  }
  for (Maker* m : silent)
    lost(*m, std::make_exception_ptr(ServiceError(
                 ServiceError::Kind::unavailable,
                 m->name() + " sent nothing for " + std::to_string(job_->options.timeout.count()) + " ms")));
}

void ServiceStream::fall_back_to_local() {
  std::lock_guard lock(mutex_);
  const bool any_worker =
      std::any_of(makers_.begin(), makers_.end(), [](const auto& m) { return m->remote() && !m->dead; });
  const int asked = job_->options.local_threads;
  if (local_gpu_first_) local_gpu_first_->set_workers_serving(any_worker);
  if (local_ != nullptr) {
    // A fallback stands down once a worker is back: it takes no new splits, and goes when its own are done.
    if (local_is_fallback_ && any_worker && ledger_.assigned_to(local_) == 0) {
      local_->dead = true;
      note("workers are back: the trainer's own cores stopped making splits");
    }
    return;
  }
  // A moment first: the workers' streams open within it when there are any.
  const bool fallback =
      asked == 0 && job_->options.local_fallback && !any_worker && Clock::now() - started_ >= kFallbackGrace;
  if (asked == 0 && !fallback) return;
  if (!job_->local_chain) {
    if (fallback || asked > 0)
      note("no worker reachable, and this process cannot build the chain itself (no data here?): waiting");
    return;
  }
  PipelineOptionChanges where;
  where.threads = asked > 0 ? asked : 0;
  where.cpus = job_->options.local_cpus;
  where.host_memory = options_.host_memory;
  where.trace = options_.trace;
  // The consumer's deferral (a DeviceFeeder decoding on its GPU): the trainer's own splits leave to its GPU
  // decoder what the policy asks, as a local pipeline would; the workers' batches arrive decoded (issue 40:
  // local first, the GPU decoder's share included, remote for the deficit). While workers serve, every
  // sample the GPU takes (local_gpu_first, gpu_first_defer.h); never in deterministic order, where which
  // sample the GPU decodes must not depend on which workers are up.
  where.defer = options_.defer;
  if (options_.defer && job_->options.local_gpu_first && !deterministic_) {
    local_gpu_first_ = std::make_shared<GpuFirstDefer>(options_.defer);
    local_gpu_first_->set_workers_serving(any_worker);
    where.defer = local_gpu_first_;
  }
  // Room for what waits for the consumer and what it holds (deterministic: the whole split, see
  // receive_depth).
  const std::size_t most_waiting = deterministic_ ? job_->definition.geometry().split_batches() : prefetch_;
  where.held_batches = most_waiting + options_.held_batches + 1;
  LocalMaker::Settings settings{.chain = *job_->local_chain,
                                .seed = job_->definition.chain().seed(),
                                .geometry = job_->definition.geometry(),
                                .consumer = job_->join.consumer(),
                                .where = where,
                                .most_waiting = most_waiting};
  auto maker = std::make_unique<LocalMaker>(asked > 0 ? "local" : "local (fallback)", std::move(settings),
                                            static_cast<MakerSink&>(*this));
  local_ = maker.get();
  local_is_fallback_ = asked == 0;
  makers_.insert(makers_.begin(), std::move(maker));
  if (local_is_fallback_) note("no worker reachable: training on the trainer's own cores");
}

void ServiceStream::dispatcher_unreachable(const ServiceError& error) {
  std::lock_guard lock(mutex_);
  if (dispatcher_ok_ || notes_.empty())
    note("dispatcher " + job_->dispatcher + " unreachable (" + error.what() +
         "): going on with the known workers from this trainer's own position");
  dispatcher_ok_ = false;
  reattach_ = true;
}

}  // namespace conveyor::service::detail
