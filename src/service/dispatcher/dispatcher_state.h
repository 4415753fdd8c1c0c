// What the dispatcher knows, as a state machine of journal records: apply(record) is the only way it changes,
// so that replaying the journal rebuilds exactly what a dispatcher had answered before it stopped. Liveness
// (heartbeats, a trainer's last report) is not journaled: it is re-learned within a heartbeat.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "src/service/wire/conveyor_service_v1.pb.h"

namespace conveyor::service::detail {

namespace v1 = ::conveyor::service::v1;
using SteadyClock = std::chrono::steady_clock;

struct ConsumerState {
  std::uint64_t generation = 0;
  std::uint64_t cursor = 0;                // the next split to hand out
  v1::ClientHeartbeatRequest last_report;  // not journaled
};

struct JobState {
  v1::JobDefinition definition;
  std::map<std::uint64_t, ConsumerState> consumers;
};

struct WorkerState {
  std::uint64_t id = 0;
  std::string address;
  v1::WorkerInfo info;
  v1::WorkerFigures figures;               // not journaled
  SteadyClock::time_point last_heartbeat;  // at restart: the restart (a grace period to beat again)
};

class DispatcherState {
 public:
  void apply(const v1::JournalRecord& record);

  JobState* job(std::uint64_t id);
  JobState* job_named(const std::string& name);
  WorkerState* worker(std::uint64_t id);
  const std::map<std::uint64_t, JobState>& jobs() const noexcept { return jobs_; }
  std::map<std::uint64_t, WorkerState>& workers() noexcept { return workers_; }
  std::uint64_t next_job_id() const noexcept { return next_job_id_; }
  std::uint64_t next_worker_id() const noexcept { return next_worker_id_; }

 private:
  std::map<std::uint64_t, JobState> jobs_;
  std::map<std::uint64_t, WorkerState> workers_;
  std::uint64_t next_job_id_ = 1, next_worker_id_ = 1;
};

}  // namespace conveyor::service::detail
