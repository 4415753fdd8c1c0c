// Who makes a trainer's splits: a worker over the data plane (RemoteMaker: one stream, a few splits in hand),
// or the trainer's own cores (LocalMaker: the split's pipeline in this process, the same function a worker
// runs). Both report to the stream through MakerSink; the stream decides who gets which split.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/service/chain.h"
#include "src/service/client/stream_sender.h"
#include "src/service/common/shared_region.h"
#include "src/service/common/split_plan.h"
#include "src/service/transport/links.h"

namespace conveyor::service::detail {

class Maker;

// What makers tell the stream. Called from the makers' threads and the transport's: thread-safe, quick.
class MakerSink {
 public:
  virtual ~MakerSink() = default;
  // A frame from a worker: false to stop reading that stream until it is resumed.
  virtual bool frame(Maker& maker, ReceivedFrame frame) = 0;
  // A batch made here.
  virtual void batch(Maker& maker, std::uint64_t split, std::uint64_t batch_in_split, Batch batch) = 0;
  virtual void split_end(Maker& maker, std::uint64_t split, std::uint64_t batches) = 0;
  virtual void split_failed(Maker& maker, std::exception_ptr error) = 0;
  // The maker cannot go on (its worker was lost, refused the stream, or broke the protocol).
  virtual void lost(Maker& maker, std::exception_ptr error) = 0;
};

class Maker {
 public:
  virtual ~Maker() = default;
  const std::string& name() const noexcept { return name_; }
  bool remote() const noexcept { return remote_; }
  // Starts making `part` (SplitPlan::remainder of a split from its batch `first_batch`: the whole split when
  // 0). Batches are numbered within the whole split. Never blocks.
  virtual void make(const Split& part, std::uint64_t first_batch) = 0;
  // Reads again after frame() returned false (remote only).
  virtual void resume() {}
  // Stops everything it does; its sink hears nothing more once this returns.
  virtual void stop() = 0;

  // Its share of the work, for PipelineStats::source_parts (updated under the stream's lock).
  SourcePart figures;
  std::chrono::steady_clock::time_point busy_since{};
  std::chrono::steady_clock::time_point last_heard = std::chrono::steady_clock::now();
  bool paused = false;  // its frames wait in the stream's queue (remote)
  bool dead = false;    // lost: no more splits for it

 protected:
  Maker(std::string name, bool remote) : name_(std::move(name)), remote_(remote) { figures.name = name_; }

 private:
  const std::string name_;
  const bool remote_;
};

// A worker's stream of this trainer's splits: one of ServiceOptions::streams_per_worker, each on a connection
// of its own (`stream_index` numbers them from 0). A worker of this host may offer its region of shared
// memory first: mapped here, its lent batches reach the sink as frames whose tensors' slices lie in the
// region, and each is released to the worker when the sink lets its frame go.
class RemoteMaker final : public Maker, private StreamHandler {
 public:
  RemoteMaker(const std::string& address, std::uint64_t worker_id, std::size_t stream_index,
              const LinkOptions& link, const v1::StreamOpen& open, MakerSink& sink);
  ~RemoteMaker() override;
  void make(const Split& part, std::uint64_t first_batch) override;
  void resume() override;
  void stop() override;
  std::uint64_t worker_id() const noexcept { return worker_id_; }
  const std::string& address() const noexcept { return address_; }
  std::size_t stream() const noexcept { return stream_index_; }

 private:
  bool on_frame(ReceivedFrame frame) override;
  void on_closed(std::exception_ptr error) override;
  // Maps the region a worker offered and answers it (transport thread).
  void accept_shared_memory(const v1::SharedMemoryOffer& offer);
  // A lent batch's frame, its tensors' slices added from the region; InvalidArgument when they do not fit it.
  ReceivedFrame with_lent_tensors(const v1::BatchHeader& header, ReceivedFrame frame);

  const std::string address_;
  const std::uint64_t worker_id_;
  const std::size_t stream_index_;
  MakerSink& sink_;
  std::atomic<bool> stopped_{false};
  std::unique_ptr<WorkerLink> link_;
  // make() runs on the stream's control thread, resume() on its decoding thread, stop() on either: the stream
  // is taken out under the lock and destroyed outside it (its destructor waits for its end).
  std::mutex mutex_;
  std::unique_ptr<SplitStream> stream_;
  const std::shared_ptr<StreamSender> sender_ = std::make_shared<StreamSender>();  // answers and releases
  std::shared_ptr<const MappedRegion> region_;  // the worker's shared memory (transport thread only)
};

// The trainer's own cores: each split it is handed runs on a thread of its own (so that a split the consumer
// needs first is never stuck behind another), its pipeline's batches handed over as they come.
class LocalMaker final : public Maker {
 public:
  struct Settings {
    Chain chain;
    std::uint64_t seed = 0;
    v1::JobGeometry geometry;
    std::uint64_t consumer = 0;
    PipelineOptionChanges where;   // threads, CPUs, host memory, held batches
    std::size_t most_waiting = 4;  // batches of one split made but not yet delivered, at most
  };
  LocalMaker(std::string name, Settings settings, MakerSink& sink);
  ~LocalMaker() override;
  void make(const Split& part, std::uint64_t first_batch) override;
  void stop() override;
  // One of its batches went to the consumer.
  void delivered(std::uint64_t split);

 private:
  struct Runner {
    std::thread thread;
    bool done = false;
  };
  void run(Split part, std::uint64_t first_batch, Runner* runner) noexcept;

  const Settings settings_;
  MakerSink& sink_;
  std::mutex mutex_;
  std::condition_variable room_;
  bool stopping_ = false;
  std::map<std::uint64_t, std::size_t> waiting_;  // per split: made, not delivered
  std::vector<BatchIterator*> running_;
  std::list<Runner> runners_;  // finished ones are joined by the next make()
};

}  // namespace conveyor::service::detail
