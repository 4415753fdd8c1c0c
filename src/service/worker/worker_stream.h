// One trainer's stream on a worker: the splits it asks for, made one after another (the next one's pipeline
// started while the current one is sent, so that the cores do not idle between splits) and sent in order, a
// batch a frame, each split closed by its end or its failure.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "conveyor/dataset.h"
#include "src/service/transport/links.h"
#include "src/service/worker/job_cache.h"

namespace conveyor::service::detail {

// What the worker counts, summed over its streams.
struct WorkerTally {
  std::atomic<std::uint64_t> splits{0}, batches{0}, elements{0}, bytes_sent{0}, refused{0}, busy_ns{0};
  std::atomic<std::size_t> streams{0};
};

// What a stream takes from its worker.
struct StreamContext {
  JobCache& jobs;
  PipelineOptionChanges where;  // threads, CPUs, nice, host memory, held batches
  WorkerTally& tally;
};

class WorkerStream final : public StreamSession {
 public:
  // Starts the stream's thread, which fetches the job (checking the token) before serving requests.
  WorkerStream(const StreamContext& context, v1::StreamOpen open, std::shared_ptr<FrameSink> sink);
  // Stops and joins the thread.
  ~WorkerStream() override;

  void on_request(const v1::SplitRequest& split) override;
  void on_closed() override;
  // The thread has ended (the trainer went away, or the stream was refused).
  bool finished() const noexcept { return finished_.load(); }

 private:
  struct Running {
    v1::SplitRequest request;
    std::optional<Split> split;
    std::unique_ptr<BatchIterator> batches;  // stable address: cancelled from on_closed
  };
  void run() noexcept;
  void serve(const JobContext& job);
  // The next request, or nullopt once the stream is closed.
  std::optional<v1::SplitRequest> next_request(bool wait);
  Running start(const JobContext& job, const v1::SplitRequest& request);
  void send_split(Running& split);

  const StreamContext context_;
  const v1::StreamOpen open_;
  const std::shared_ptr<FrameSink> sink_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<v1::SplitRequest> requests_;
  bool closed_ = false;
  std::vector<BatchIterator*> iterators_;  // the running splits' pipelines, cancelled when the stream closes
  std::atomic<bool> finished_{false};
  std::thread thread_;  // last: it stops before the members above go
};

}  // namespace conveyor::service::detail
