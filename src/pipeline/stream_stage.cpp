#include "src/pipeline/stream_stage.h"

#include <mutex>

#include "src/sources/shard_plan.h"
#include "src/sources/shard_set.h"
#include "src/sources/shard_streamer.h"

namespace conveyor::detail {
namespace {

class StreamStage final : public ElementOrder::Stage {
 public:
  StreamStage(std::shared_ptr<const ShardSet> shards, std::size_t max_member_bytes)
      : shards_(std::move(shards)), max_member_bytes_(max_member_bytes) {
    counts_.reserve(shards_->shards.size());
    for (const ShardInfo& shard : shards_->shards) counts_.push_back(shard.samples);
  }
  ~StreamStage() override {
    streamer_.reset();  // joins its threads while the pool is still there (nothing else runs now)
  }

  // Runs on the source stage's thread (the only one that calls reset and next).
  void reset(std::uint64_t epoch) override {
    const TarShardOptions& options = shards_->options;
    std::vector<Segment> segments =
        plan_epoch(counts_, shard_order(counts_.size(), options.shuffle_shards, options.seed, epoch),
                   options.ranks.rank, options.ranks.world_size, options.remainder);
    std::unique_ptr<ShardStreamer> old;
    {
      std::lock_guard lock(mutex_);
      old = std::move(streamer_);
      if (old) old->cancel();
    }
    old.reset();  // joined outside the lock, so that cancel() never waits for it
    auto streamer = std::make_unique<ShardStreamer>(shards_, std::move(segments), pool_, max_member_bytes_);
    std::lock_guard lock(mutex_);
    if (cancelled_) streamer->cancel();
    streamer_ = std::move(streamer);
    epoch_ = epoch;
  }

  std::optional<OrderedElement> next() override {
    ShardStreamer* streamer = nullptr;
    {
      std::lock_guard lock(mutex_);
      streamer = streamer_.get();
    }
    if (streamer == nullptr) return std::nullopt;
    std::optional<StreamedElement> element = streamer->next();  // waits for the readers
    if (!element) return std::nullopt;
    return OrderedElement{element->index, epoch_, element->index, element->padding,
                          std::move(element->sample)};
  }

  void cancel() override {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    if (streamer_) streamer_->cancel();
  }

 private:
  const std::shared_ptr<const ShardSet> shards_;
  const std::size_t max_member_bytes_;
  std::vector<std::optional<std::uint64_t>> counts_;
  StreamedSamplePool pool_;  // before the streamer: outlives it and every sample it lent
  std::uint64_t epoch_ = 0;

  std::mutex mutex_;  // streamer_ and cancelled_: cancel() comes from another thread
  std::unique_ptr<ShardStreamer> streamer_;
  bool cancelled_ = false;
};

}  // namespace

std::unique_ptr<ElementOrder::Stage> make_stream_stage(std::shared_ptr<const ShardSet> shards,
                                                       std::size_t max_member_bytes) {
  return std::make_unique<StreamStage>(std::move(shards), max_member_bytes);
}

}  // namespace conveyor::detail
