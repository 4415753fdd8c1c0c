// One trainer's stream on a worker: the splits it asks for, made one after another (the next one's pipeline
// started with the current one's sending when its request is already there) and sent in order, a batch a
// frame, each split closed by its end or its failure.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "conveyor/dataset.h"
#include "src/service/common/shared_region.h"
#include "src/service/transport/links.h"
#include "src/service/worker/job_cache.h"

namespace conveyor::service::detail {

// What the worker counts, summed over its streams.
struct WorkerTally {
  std::atomic<std::uint64_t> splits{0}, batches{0}, elements{0}, bytes_sent{0}, bytes_lent{0}, refused{0},
      busy_ns{0};
  std::atomic<std::size_t> streams{0};
};

// What a stream takes from its worker.
struct StreamContext {
  JobCache& jobs;
  PipelineOptionChanges where;  // threads, CPUs, nice, host memory, held batches
  WorkerTally& tally;
  std::size_t shared_memory_bytes = 0;  // WorkerOptions::shared_memory_bytes
};

class WorkerStream final : public StreamSession {
 public:
  // Starts the stream's thread, which fetches the job (checking the token) before serving requests.
  WorkerStream(const StreamContext& context, v1::StreamOpen open, std::shared_ptr<FrameSink> sink);
  // Stops and joins the thread.
  ~WorkerStream() override;

  void on_request(const v1::SplitRequest& split) override;
  void on_shared_memory(const v1::SharedMemoryAnswer& answer) override;
  void on_release(const v1::Release& release) override;
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
  // Offers the trainer a region of shared memory, when it asked and this host can make one, and waits for
  // its answer (at most kAnswerTimeout).
  void offer_shared_memory();
  static constexpr std::chrono::milliseconds kAnswerTimeout{2000};
  // Sends a batch: its tensors' offsets when the trainer has the region mapped and they lie in it (the
  // batch's memory then stays lent until released), else its bytes.
  bool send_batch(Batch batch, std::uint64_t split, std::uint64_t batch_in_split);

  const StreamContext context_;
  const v1::StreamOpen open_;
  const std::shared_ptr<FrameSink> sink_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<v1::SplitRequest> requests_;
  bool closed_ = false;
  std::vector<BatchIterator*> iterators_;  // the running splits' pipelines, cancelled when the stream closes
  // Shared memory: the region's blocks for this stream's pipelines (null: none), whether the trainer mapped
  // it, and the batches lent to it (their memory, until it releases them).
  std::shared_ptr<SharedRegionMemory> shared_;
  bool shared_answered_ = false;
  std::atomic<bool> shared_mapped_{false};
  std::map<std::uint64_t, std::shared_ptr<const void>> lent_;
  std::uint64_t next_lent_ = 1;
  std::atomic<bool> finished_{false};
  std::thread thread_;  // last: it stops before the members above go
};

}  // namespace conveyor::service::detail
