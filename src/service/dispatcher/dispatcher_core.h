// The dispatcher's answers: each call checked (protocol version, token, fingerprint, consumer, generation),
// each change journaled before it is answered, all under one lock (calls are few: a trainer asks for a split
// every fraction of a second, a worker beats every second).
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "src/service/dispatcher/dispatcher_state.h"
#include "src/service/dispatcher/journal.h"
#include "src/service/transport/links.h"

namespace conveyor::service::detail {

class DispatcherCore final : public DispatcherCalls {
 public:
  // Replays `work_dir`'s journal (none when empty).
  DispatcherCore(const std::filesystem::path& work_dir, std::chrono::milliseconds worker_timeout);

  v1::JoinJobResponse join_job(const v1::JoinJobRequest& request) override;
  v1::DescribeJobResponse describe_job(const v1::DescribeJobRequest& request) override;
  v1::GetSplitResponse get_split(const v1::GetSplitRequest& request) override;
  v1::ClientHeartbeatResponse client_heartbeat(const v1::ClientHeartbeatRequest& request) override;
  v1::RegisterWorkerResponse register_worker(const v1::RegisterWorkerRequest& request) override;
  v1::WorkerHeartbeatResponse worker_heartbeat(const v1::WorkerHeartbeatRequest& request) override;
  v1::GetJobResponse get_job(const v1::GetJobRequest& request) override;
  v1::GetStatusResponse get_status(const v1::GetStatusRequest& request) override;

  std::size_t replayed() const noexcept { return journal_ ? journal_->replayed() : 0; }

 private:
  void record(const v1::JournalRecord& record);  // journal, then apply
  JobState& job_for(std::uint64_t job_id, const v1::Caller& caller);
  ConsumerState& consumer_for(JobState& job, std::uint64_t consumer, std::uint64_t generation);
  void describe(JobState& job, const v1::ChainDescription& description);
  void add_live_workers(google::protobuf::RepeatedPtrField<v1::WorkerAddress>* out);

  const std::chrono::milliseconds worker_timeout_;
  const SteadyClock::time_point started_ = SteadyClock::now();
  std::mutex mutex_;
  DispatcherState state_;
  std::unique_ptr<Journal> journal_;
};

}  // namespace conveyor::service::detail
