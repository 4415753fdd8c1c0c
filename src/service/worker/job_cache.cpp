#include "src/service/worker/job_cache.h"

#include "conveyor/error.h"
#include "conveyor/version.h"
#include "src/service/common/job_identity.h"
#include "src/service/common/protocol.h"
#include "src/service/common/split_dataset.h"

namespace conveyor::service::detail {

namespace {

// The job's definition from the dispatcher, which checks the token.
v1::JobDefinition fetch(DispatcherLink& dispatcher, std::uint64_t job_id, const std::string& token) {
  v1::GetJobRequest request;
  request.mutable_caller()->set_protocol(kProtocolVersion);
  request.mutable_caller()->set_version(CONVEYOR_VERSION_STRING);
  request.mutable_caller()->set_token(token);
  request.set_job_id(job_id);
  return dispatcher.get_job(request).job();
}

}  // namespace

JobCache::Entry& JobCache::entry(std::uint64_t job_id, const std::string& token, const std::string& fingerprint,
                                 std::unique_lock<std::mutex>& /*lock*/) {
  if (const auto it = jobs_.find(job_id);
      it != jobs_.end() && !fingerprint.empty() && it->second.definition.fingerprint() != fingerprint)
    jobs_.erase(it);  // that id is another job now: fetched and built again below
  if (const auto it = jobs_.find(job_id); it != jobs_.end()) {
    const v1::JobDefinition& d = it->second.definition;
    if (!token_matches(d.token_salt(), d.token_hash(), token))
      throw ServiceError(ServiceError::Kind::unauthorized, "job " + d.name() + ": wrong token");
    // Described since it was fetched: the description is the dispatcher's to give.
    if (!d.described()) it->second.definition = fetch(dispatcher_, job_id, token);
    return it->second;
  }
  Entry entry;
  entry.definition = fetch(dispatcher_, job_id, token);
  if (!fingerprint.empty() && entry.definition.fingerprint() != fingerprint)
    throw ServiceError(ServiceError::Kind::refused,
                       "job " + std::to_string(job_id) + " at the dispatcher is '" + entry.definition.name() +
                           "' (fingerprint " + entry.definition.fingerprint() + "), not the trainer's (" + fingerprint +
                           "): join the job again");
  const ChainSpec spec = from_wire(entry.definition.chain());
  try {
    entry.chain = std::make_shared<const Chain>(chains_.build(spec));
  } catch (const ServiceError&) {
    throw;
  } catch (const std::exception& error) {
    throw ServiceError(ServiceError::Kind::refused, "this worker cannot build chain '" + spec.name +
                                                        "' of job " + entry.definition.name() + ": " +
                                                        error.what());
  }
  entry.description = describe_chain(*entry.chain);
  return jobs_.emplace(job_id, std::move(entry)).first->second;
}

std::shared_ptr<const JobContext> JobCache::job(std::uint64_t job_id, const std::string& token,
                                                const std::string& fingerprint) {
  std::unique_lock lock(mutex_);
  Entry& e = entry(job_id, token, fingerprint, lock);
  const v1::JobDefinition& d = e.definition;
  if (!d.described())
    throw ServiceError(ServiceError::Kind::refused, "job " + d.name() + " has no chain description yet");
  if (const std::string difference = description_difference(d.description(), e.description);
      !difference.empty())
    throw ServiceError(ServiceError::Kind::refused,
                       "this worker's data differs from job " + d.name() + "'s: " + difference);
  return std::make_shared<const JobContext>(
      JobContext{d, *e.chain, plan_of(d.geometry(), d.description().source_size())});
}

v1::ChainDescription JobCache::describe(std::uint64_t job_id, const std::string& token) {
  std::unique_lock lock(mutex_);
  return entry(job_id, token, {}, lock).description;
}

}  // namespace conveyor::service::detail
