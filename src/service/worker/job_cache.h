// The jobs a worker serves: each job's definition (from the dispatcher, which checks the trainer's token the
// first time), its chain built once from the worker's registry, and the check that this worker's data is the
// job's. A stream whose token, consumer or data does not fit is refused with the reason.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "conveyor/service/chain.h"
#include "src/service/common/split_plan.h"
#include "src/service/transport/links.h"

namespace conveyor::service::detail {

struct JobContext {
  v1::JobDefinition definition;
  Chain chain;
  SplitPlan plan;
};

class JobCache {
 public:
  JobCache(const ChainRegistry& chains, DispatcherLink& dispatcher)
      : chains_(chains), dispatcher_(dispatcher) {}

  // Job `job_id` for a caller presenting `token`, whose fingerprint is `fingerprint` (empty: any). A job
  // cached under that id with another fingerprint (a dispatcher that restarted without its journal numbers
  // jobs again) is fetched again. Throws ServiceError: unauthorized (token), not_found (no such job), refused
  // (this worker cannot build the chain, its data differs from the job's, or the id is another job now),
  // unavailable (the dispatcher did not answer the first time).
  std::shared_ptr<const JobContext> job(std::uint64_t job_id, const std::string& token,
                                        const std::string& fingerprint = {});
  // This worker's description of the job's chain (DescribeChain).
  v1::ChainDescription describe(std::uint64_t job_id, const std::string& token);

 private:
  struct Entry {
    v1::JobDefinition definition;
    std::shared_ptr<const Chain> chain;
    v1::ChainDescription description;
  };
  Entry& entry(std::uint64_t job_id, const std::string& token, const std::string& fingerprint,
               std::unique_lock<std::mutex>& lock);

  const ChainRegistry& chains_;
  DispatcherLink& dispatcher_;
  std::mutex mutex_;  // held while a job is fetched and built: once per job, not per stream
  std::map<std::uint64_t, Entry> jobs_;
};

}  // namespace conveyor::service::detail
