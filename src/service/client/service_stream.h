// One iteration over a job's batches (the BatchStream of from_service): the consumer's next(), a control
// thread that keeps the job's splits moving (asks the dispatcher for the next, hands them to makers, beats,
// notices losses), and a decoding thread that writes received frames into the iterator's pool buffers.
//
//   workers ──frames──▶ arrivals (per split, in order) ──decode──▶ ready ──next()──▶ the consumer
//   own cores ──batches─▶ arrivals (already in memory)   ─────────▶ ready
//
// One lock guards the ledger, the makers' figures and the arrivals; nothing that may block (a call to the
// dispatcher, a worker, a pool) is done while holding it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "conveyor/batch_source.h"
#include "conveyor/service/client.h"
#include "src/service/client/gpu_first_defer.h"
#include "src/service/client/makers.h"
#include "src/service/client/split_ledger.h"
#include "src/service/transport/links.h"

namespace conveyor::service::detail {

// What from_service learned about the job, shared by every iterator of the dataset.
struct JobInfo {
  std::string dispatcher;            // HOST:PORT
  v1::JoinJobRequest join;           // how to join again (caller, chain, geometry, consumer)
  v1::JobDefinition definition;      // job_id 0: the dispatcher was not reachable (the job is joined later)
  std::optional<Chain> local_chain;  // this process can build the chain
  ServiceOptions options;
  LinkOptions link;
};

class ServiceStream final : public BatchStream, private MakerSink {
 public:
  ServiceStream(std::shared_ptr<const JobInfo> job, BatchBuffers buffers, const PipelineOptions& options,
                std::size_t prefetch, const BatchStreamPosition& start);
  ~ServiceStream() override;

  std::optional<Batch> next() override;
  BatchStreamPosition position() const override;
  void add_stats(PipelineStats& stats) const override;
  void cancel() noexcept override;

 private:
  using Clock = std::chrono::steady_clock;
  // How long a trainer without any worker waits before its own cores take over (with local_fallback).
  static constexpr std::chrono::milliseconds kFallbackGrace{1000};

  // A batch on its way to the consumer: received bytes to decode, or a batch ready.
  struct Arrival {
    std::uint64_t batch_in_split = 0;
    Maker* maker = nullptr;
    std::optional<v1::BatchHeader> header;  // a frame still to decode, with its bytes
    ReceivedFrame frame;
    std::optional<Batch> batch;  // ready
    bool decoding = false;
  };

  // ---- MakerSink (service_stream.cpp) ----
  bool frame(Maker& maker, ReceivedFrame frame) override;
  void batch(Maker& maker, std::uint64_t split, std::uint64_t batch_in_split, Batch batch) override;
  void split_end(Maker& maker, std::uint64_t split, std::uint64_t batches) override;
  void split_failed(Maker& maker, std::exception_ptr error) override;
  void lost(Maker& maker, std::exception_ptr error) override;

  // ---- decoding (service_stream.cpp) ----
  void decode_loop() noexcept;
  // Under the lock: the arrival to decode next, or null (deterministic: only the next in order).
  std::pair<std::uint64_t, Arrival*> arrival_to_decode();
  std::size_t frames_waiting(const Maker& maker) const;

  // ---- control (scheduling.cpp) ----
  void control_loop() noexcept;
  void attach();
  void heartbeat();
  void refresh_makers(const google::protobuf::RepeatedPtrField<v1::WorkerAddress>& workers);
  void hand_out();
  std::optional<std::uint64_t> next_split_index();
  Maker* maker_with_room();
  void note(const std::string& text);

  // ---- fault handling (fault_handling.cpp) ----
  void handle_lost_makers();
  void check_silent_makers();
  void fall_back_to_local();
  void dispatcher_unreachable(const ServiceError& error);

  const std::shared_ptr<const JobInfo> job_;
  const BatchBuffers buffers_;
  const PipelineOptions options_;
  const std::size_t prefetch_;
  const bool deterministic_;
  const std::size_t receive_depth_;  // frames a worker's stream may have waiting before it is paused

  const Clock::time_point started_ = Clock::now();
  const std::unique_ptr<DispatcherLink> dispatcher_link_;  // the control thread's

  mutable std::mutex mutex_;
  std::condition_variable ready_cv_;    // the consumer waits here
  std::condition_variable decode_cv_;   // the decoder
  std::condition_variable control_cv_;  // the control thread
  SplitLedger ledger_;
  std::map<std::uint64_t, std::deque<Arrival>> arrivals_;  // per split, in batch order
  std::vector<std::unique_ptr<Maker>> makers_;             // local first
  std::vector<std::unique_ptr<Maker>> retired_;  // lost makers, stopped and freed by the control thread
  std::map<std::string, Clock::time_point>
      lost_at_;                                 // worker address -> when it was lost (retry after a pause)
  std::map<std::string, std::string> refused_;  // worker address -> why it refused this job
  LocalMaker* local_ = nullptr;
  bool local_is_fallback_ = false;
  std::shared_ptr<GpuFirstDefer> local_gpu_first_;  // the local splits' deferral while workers serve, or null
  std::exception_ptr error_;  // delivered by next() (a chain's failure, a refusal, ...)
  bool cancelled_ = false;
  bool dispatcher_ok_ = false;
  std::uint64_t job_id_ = 0;
  std::uint64_t generation_ = 0;  // 0: not attached
  bool reattach_ = true;
  std::vector<v1::WorkerAddress> workers_;  // live ones, as the dispatcher last said
  Clock::time_point last_heartbeat_{};
  std::vector<std::string> notes_;  // PipelineStats::source_note's lines
  std::uint64_t consumer_waits_ = 0;
  std::chrono::nanoseconds waited_{0};
  std::uint64_t sequence_ = 0;  // the next batch's number
  std::uint64_t malformed_ = 0;
  const std::string heap_note_;  // what glibc's heap does with received memory (keep_received_memory)

  std::thread control_;
  std::thread decoder_;  // threads last: they stop before the members above go
};

}  // namespace conveyor::service::detail
