#include "src/service/dispatcher/dispatcher_state.h"

#include <algorithm>

namespace conveyor::service::detail {

void DispatcherState::apply(const v1::JournalRecord& record) {
  switch (record.kind_case()) {
    case v1::JournalRecord::kJobCreated: {
      const v1::JobDefinition& d = record.job_created();
      jobs_[d.job_id()].definition = d;
      next_job_id_ = std::max(next_job_id_, d.job_id() + 1);
      break;
    }
    case v1::JournalRecord::kJobDescribed: {
      const v1::JobDefinition& d = record.job_described();
      if (JobState* j = job(d.job_id())) {
        j->definition.set_described(true);
        *j->definition.mutable_description() = d.description();
      }
      break;
    }
    case v1::JournalRecord::kConsumerAttached: {
      const v1::ConsumerAttached& a = record.consumer_attached();
      if (JobState* j = job(a.job_id())) {
        ConsumerState& c = j->consumers[a.consumer()];
        c.generation = a.generation();
        c.cursor = a.cursor();
      }
      break;
    }
    case v1::JournalRecord::kSplitGranted: {
      const v1::SplitGranted& g = record.split_granted();
      if (JobState* j = job(g.job_id())) j->consumers[g.consumer()].cursor = g.split() + 1;
      break;
    }
    case v1::JournalRecord::kWorkerRegistered: {
      const v1::WorkerRegistration& r = record.worker_registered();
      WorkerState& w = workers_[r.worker_id()];
      w.id = r.worker_id();
      w.address = r.address();
      w.info = r.info();
      w.last_heartbeat = SteadyClock::now();
      next_worker_id_ = std::max(next_worker_id_, r.worker_id() + 1);
      break;
    }
    case v1::JournalRecord::KIND_NOT_SET:
      break;
  }
}

JobState* DispatcherState::job(std::uint64_t id) {
  const auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

JobState* DispatcherState::job_named(const std::string& name) {
  for (auto& [id, j] : jobs_)
    if (j.definition.name() == name) return &j;
  return nullptr;
}

WorkerState* DispatcherState::worker(std::uint64_t id) {
  const auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

}  // namespace conveyor::service::detail
