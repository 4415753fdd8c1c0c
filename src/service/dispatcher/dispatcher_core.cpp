#include "src/service/dispatcher/dispatcher_core.h"

#include "conveyor/error.h"
#include "conveyor/version.h"
#include "src/service/common/job_identity.h"
#include "src/service/common/protocol.h"
#include "src/service/common/split_dataset.h"

namespace conveyor::service::detail {
namespace {

using Kind = ServiceError::Kind;

void check_protocol(const v1::Caller& caller) {
  if (caller.protocol() != kProtocolVersion)
    throw ServiceError(Kind::refused,
                       "the dispatcher speaks " +
                           describe_protocol(kProtocolVersion, CONVEYOR_VERSION_STRING) + ", the caller " +
                           describe_protocol(caller.protocol(), caller.version()) +
                           ": run one version of conveyor on the trainers, workers and dispatcher");
}

void check_token(const v1::JobDefinition& job, const v1::Caller& caller) {
  if (!token_matches(job.token_salt(), job.token_hash(), caller.token()))
    throw ServiceError(Kind::unauthorized, "job '" + job.name() + "': " +
                                               (caller.token().empty() ? "no token given" : "wrong token"));
}

void check_geometry(const v1::JobGeometry& g) {
  if (g.batch_size() == 0 || g.split_batches() == 0 || g.consumers() == 0)
    throw ServiceError(Kind::malformed, "a job needs a batch size, a split size and consumers of at least 1");
}

}  // namespace

DispatcherCore::DispatcherCore(const std::filesystem::path& work_dir,
                               std::chrono::milliseconds worker_timeout)
    : worker_timeout_(worker_timeout) {
  if (!work_dir.empty())
    journal_ = std::make_unique<Journal>(work_dir, [this](const v1::JournalRecord& r) { state_.apply(r); });
}

void DispatcherCore::record(const v1::JournalRecord& record) {
  if (journal_) journal_->append(record);  // on disk before it is applied and answered
  state_.apply(record);
}

JobState& DispatcherCore::job_for(std::uint64_t job_id, const v1::Caller& caller) {
  check_protocol(caller);
  JobState* job = state_.job(job_id);
  if (job == nullptr)
    throw ServiceError(Kind::not_found, "no job " + std::to_string(job_id) + " at this dispatcher");
  check_token(job->definition, caller);
  return *job;
}

ConsumerState& DispatcherCore::consumer_for(JobState& job, std::uint64_t consumer, std::uint64_t generation) {
  const auto it = job.consumers.find(consumer);
  if (it == job.consumers.end())
    throw ServiceError(Kind::not_found, "consumer " + std::to_string(consumer) + " of job '" +
                                            job.definition.name() + "' has not joined");
  if (it->second.generation != generation)
    throw ServiceError(Kind::refused, "consumer " + std::to_string(consumer) + " of job '" +
                                          job.definition.name() +
                                          "' was taken over by a newer trainer (generation " +
                                          std::to_string(it->second.generation) + ", this one " +
                                          std::to_string(generation) + ")");
  return it->second;
}

void DispatcherCore::describe(JobState& job, const v1::ChainDescription& description) {
  if (job.definition.described()) {
    if (const std::string difference = description_difference(job.definition.description(), description);
        !difference.empty())
      throw ServiceError(Kind::refused,
                         "job '" + job.definition.name() + "': the data differs: " + difference);
    return;
  }
  v1::JournalRecord r;
  v1::JobDefinition& d = *r.mutable_job_described();
  d.set_job_id(job.definition.job_id());
  *d.mutable_description() = description;
  record(r);
}

void DispatcherCore::add_live_workers(google::protobuf::RepeatedPtrField<v1::WorkerAddress>* out) {
  const SteadyClock::time_point now = SteadyClock::now();
  for (auto& [id, w] : state_.workers())
    if (now - w.last_heartbeat <= worker_timeout_) {
      v1::WorkerAddress& a = *out->Add();
      a.set_worker_id(id);
      a.set_address(w.address);
    }
}

v1::JoinJobResponse DispatcherCore::join_job(const v1::JoinJobRequest& request) {
  std::lock_guard lock(mutex_);
  check_protocol(request.caller());
  check_geometry(request.geometry());
  const std::string fingerprint = detail::fingerprint(request.chain(), request.geometry());
  if (!request.fingerprint().empty() && request.fingerprint() != fingerprint)
    throw ServiceError(Kind::refused, "the trainer's fingerprint " + request.fingerprint() +
                                          " is not its chain's (" + fingerprint +
                                          "): another version of conveyor?");
  const std::string name = request.job_name().empty() ? fingerprint : request.job_name();
  JobState* job = state_.job_named(name);
  if (job == nullptr) {
    v1::JournalRecord r;
    v1::JobDefinition& d = *r.mutable_job_created();
    d.set_job_id(state_.next_job_id());
    d.set_name(name);
    *d.mutable_chain() = request.chain();
    *d.mutable_geometry() = request.geometry();
    d.set_fingerprint(fingerprint);
    const TokenCheck token = protect_token(request.caller().token());
    d.set_token_salt(token.salt);
    d.set_token_hash(token.hash);
    record(r);
    job = state_.job(d.job_id());
  } else {
    check_token(job->definition, request.caller());
    if (job->definition.fingerprint() != fingerprint)
      throw ServiceError(
          Kind::refused,
          "job '" + name + "' runs another chain (fingerprint " + job->definition.fingerprint() +
              ", this trainer's " + fingerprint + "):\n  the job's:\n" +
              detail::describe_job(job->definition.chain(), job->definition.geometry()) +
              "  this trainer's:\n" + detail::describe_job(request.chain(), request.geometry()));
  }
  if (request.described()) describe(*job, request.description());
  const std::uint64_t consumers = job->definition.geometry().consumers();
  if (request.consumer() >= consumers)
    throw ServiceError(Kind::refused, "consumer " + std::to_string(request.consumer()) + " of job '" + name +
                                          "', which has " + std::to_string(consumers));
  v1::JoinJobResponse response;
  if (request.attach()) {
    v1::JournalRecord r;
    v1::ConsumerAttached& a = *r.mutable_consumer_attached();
    a.set_job_id(job->definition.job_id());
    a.set_consumer(request.consumer());
    const auto it = job->consumers.find(request.consumer());
    a.set_generation(it == job->consumers.end() ? 1 : it->second.generation + 1);
    a.set_cursor(request.cursor());
    record(r);
    response.set_generation(a.generation());
  }
  *response.mutable_job() = job->definition;
  response.mutable_job()->clear_token_salt();
  response.mutable_job()->clear_token_hash();
  add_live_workers(response.mutable_workers());
  return response;
}

v1::DescribeJobResponse DispatcherCore::describe_job(const v1::DescribeJobRequest& request) {
  std::lock_guard lock(mutex_);
  JobState& job = job_for(request.job_id(), request.caller());
  describe(job, request.description());
  v1::DescribeJobResponse response;
  *response.mutable_job() = job.definition;
  response.mutable_job()->clear_token_salt();
  response.mutable_job()->clear_token_hash();
  return response;
}

v1::GetSplitResponse DispatcherCore::get_split(const v1::GetSplitRequest& request) {
  std::lock_guard lock(mutex_);
  JobState& job = job_for(request.job_id(), request.caller());
  ConsumerState& consumer = consumer_for(job, request.consumer(), request.generation());
  if (!job.definition.described())
    throw ServiceError(Kind::refused, "job '" + job.definition.name() + "' has no chain description yet");
  const SplitPlan plan = plan_of(job.definition.geometry(), job.definition.description().source_size());
  v1::GetSplitResponse response;
  if (!plan.split(consumer.cursor)) {
    response.set_end(true);
    return response;
  }
  v1::JournalRecord r;
  v1::SplitGranted& g = *r.mutable_split_granted();
  g.set_job_id(request.job_id());
  g.set_consumer(request.consumer());
  g.set_split(consumer.cursor);
  record(r);
  response.set_split(g.split());
  return response;
}

v1::ClientHeartbeatResponse DispatcherCore::client_heartbeat(const v1::ClientHeartbeatRequest& request) {
  std::lock_guard lock(mutex_);
  JobState& job = job_for(request.job_id(), request.caller());
  consumer_for(job, request.consumer(), request.generation()).last_report = request;
  v1::ClientHeartbeatResponse response;
  add_live_workers(response.mutable_workers());
  return response;
}

v1::RegisterWorkerResponse DispatcherCore::register_worker(const v1::RegisterWorkerRequest& request) {
  std::lock_guard lock(mutex_);
  check_protocol(request.caller());
  // A worker that registers again at the same address (restarted) takes its old place.
  std::uint64_t id = state_.next_worker_id();
  for (const auto& [existing, w] : state_.workers())
    if (w.address == request.address()) id = existing;
  v1::JournalRecord r;
  v1::WorkerRegistration& w = *r.mutable_worker_registered();
  w.set_worker_id(id);
  w.set_address(request.address());
  *w.mutable_info() = request.info();
  record(r);
  v1::RegisterWorkerResponse response;
  response.set_worker_id(id);
  return response;
}

v1::WorkerHeartbeatResponse DispatcherCore::worker_heartbeat(const v1::WorkerHeartbeatRequest& request) {
  std::lock_guard lock(mutex_);
  check_protocol(request.caller());
  v1::WorkerHeartbeatResponse response;
  WorkerState* w = state_.worker(request.worker_id());
  response.set_known(w != nullptr);
  if (w != nullptr) {
    w->last_heartbeat = SteadyClock::now();
    w->figures = request.figures();
  }
  return response;
}

v1::GetJobResponse DispatcherCore::get_job(const v1::GetJobRequest& request) {
  std::lock_guard lock(mutex_);
  v1::GetJobResponse response;
  *response.mutable_job() = job_for(request.job_id(), request.caller()).definition;
  return response;
}

v1::GetStatusResponse DispatcherCore::get_status(const v1::GetStatusRequest& request) {
  std::lock_guard lock(mutex_);
  check_protocol(request.caller());
  const SteadyClock::time_point now = SteadyClock::now();
  v1::GetStatusResponse response;
  response.set_version(CONVEYOR_VERSION_STRING);
  response.set_uptime_seconds(std::chrono::duration<double>(now - started_).count());
  for (const auto& [id, w] : state_.workers()) {
    v1::WorkerStatus& s = *response.add_workers();
    s.set_worker_id(id);
    s.set_address(w.address);
    s.set_alive(now - w.last_heartbeat <= worker_timeout_);
    s.set_seconds_since_heartbeat(std::chrono::duration<double>(now - w.last_heartbeat).count());
    *s.mutable_info() = w.info;
    *s.mutable_figures() = w.figures;
  }
  for (const auto& [id, j] : state_.jobs()) {
    v1::JobStatus& s = *response.add_jobs();
    *s.mutable_job() = j.definition;
    s.mutable_job()->clear_token_salt();
    s.mutable_job()->clear_token_hash();
    for (const auto& [index, c] : j.consumers) {
      v1::ConsumerStatus& cs = *s.add_consumers();
      cs.set_consumer(index);
      cs.set_generation(c.generation);
      cs.set_cursor(c.cursor);
      *cs.mutable_last_report() = c.last_report;
      cs.mutable_last_report()->mutable_caller()->clear_token();
    }
  }
  return response;
}

}  // namespace conveyor::service::detail
