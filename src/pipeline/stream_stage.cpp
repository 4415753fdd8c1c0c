#include "src/pipeline/stream_stage.h"

#include <mutex>
#include <string>

#include "conveyor/error.h"
#include "src/sources/shard_plan.h"
#include "src/sources/shard_set.h"
#include "src/sources/shard_streamer.h"

namespace conveyor::detail {
namespace {

class StreamStage final : public ElementOrder::Stage {
 public:
  StreamStage(std::shared_ptr<const ShardSet> shards, std::size_t max_member_bytes, bool in_order)
      : shards_(std::move(shards)), max_member_bytes_(max_member_bytes), in_order_(in_order) {
    counts_.reserve(shards_->shards.size());
    for (const ShardInfo& shard : shards_->shards) counts_.push_back(shard.samples);
  }
  ~StreamStage() override {
    streamer_.reset();  // joins its threads while the pool is still there (nothing else runs now)
  }

  // reset, next, save and restore run on one thread at a time (the source stage's, or the iterator's
  // constructor before it starts); only cancel() comes from another.
  //
  // Nothing is read before the first next(): a chain that is restored right after it is made (an
  // iterator started from a state) opens the epoch it is restored to, not epoch 0 as well.
  void reset(std::uint64_t epoch) override {
    stop_streamer();
    epoch_ = epoch;
    emitted_ = 0;
    to_skip_ = 0;
  }

  std::optional<OrderedElement> next() override {
    ShardStreamer* streamer = started_streamer();
    if (streamer == nullptr) return std::nullopt;
    // A restore's skip: the epoch's samples before the saved position are read again and thrown away.
    for (; to_skip_ > 0; --to_skip_) {
      if (streamer->next()) continue;
      if (cancelled()) return std::nullopt;
      throw InvalidArgument("iterator state does not fit this dataset: the tar shards of epoch " +
                            std::to_string(epoch_) + " end before the saved position " +
                            std::to_string(emitted_));
    }
    std::optional<StreamedElement> element = streamer->next();  // waits for the readers
    if (!element) return std::nullopt;
    ++emitted_;
    return OrderedElement{element->index, epoch_, element->index, element->padding,
                          std::move(element->sample)};
  }

  // The state is (epoch, samples emitted in it). A tar stream cannot seek to a sample, so restore()
  // reopens the epoch's shard order (the same plan, from the seed, epoch and rank) and the first next()
  // reads the first `emitted` samples again and drops them: a restore re-reads the skipped part of the
  // epoch (at most one epoch of this rank's share), it does not jump over it.
  std::size_t words() const noexcept override { return 2; }
  void save(std::uint64_t* out) const noexcept override {
    out[0] = epoch_;
    out[1] = emitted_;
  }
  void restore(const std::uint64_t* in) override {
    if (shards_->counted()) {
      std::uint64_t samples = 0;
      for (const Segment& segment : plan(in[0]))
        samples += segment.end.value_or(segment.first) - segment.first;
      if (in[1] > samples)
        throw InvalidArgument("iterator state does not fit this dataset: position " + std::to_string(in[1]) +
                              " in epoch " + std::to_string(in[0]) +
                              ", this rank's share of the tar shards has " + std::to_string(samples) +
                              " samples");
    }
    reset(in[0]);
    emitted_ = in[1];
    to_skip_ = in[1];
  }

  void cancel() override {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    if (streamer_) streamer_->cancel();
  }

 private:
  std::vector<Segment> plan(std::uint64_t epoch) const {
    const TarShardOptions& options = shards_->options;
    return plan_epoch(counts_, shard_order(counts_.size(), options.shuffle_shards, options.seed, epoch),
                      options.ranks.rank, options.ranks.world_size, options.remainder);
  }

  // The streamer of epoch_, started on first use; null once cancelled.
  ShardStreamer* started_streamer() {
    {
      std::lock_guard lock(mutex_);
      if (streamer_ || cancelled_) return streamer_.get();
    }
    auto streamer =
        std::make_unique<ShardStreamer>(shards_, plan(epoch_), pool_, max_member_bytes_, in_order_);
    std::lock_guard lock(mutex_);
    if (cancelled_) streamer->cancel();
    streamer_ = std::move(streamer);
    return streamer_.get();
  }

  void stop_streamer() {
    std::unique_ptr<ShardStreamer> old;
    {
      std::lock_guard lock(mutex_);
      old = std::move(streamer_);
      if (old) old->cancel();
    }
    old.reset();  // joined outside the lock, so that cancel() never waits for it
  }

  bool cancelled() {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }

  const std::shared_ptr<const ShardSet> shards_;
  const std::size_t max_member_bytes_;
  const bool in_order_;
  std::vector<std::optional<std::uint64_t>> counts_;
  StreamedSamplePool pool_;  // before the streamer: outlives it and every sample it lent
  std::uint64_t epoch_ = 0;
  std::uint64_t emitted_ = 0;  // samples next() returned in this epoch (with to_skip_: the saved position)
  std::uint64_t to_skip_ = 0;  // after a restore: samples the first next() reads again and drops

  std::mutex mutex_;  // streamer_ and cancelled_: cancel() comes from another thread
  std::unique_ptr<ShardStreamer> streamer_;
  bool cancelled_ = false;
};

}  // namespace

std::unique_ptr<ElementOrder::Stage> make_stream_stage(std::shared_ptr<const ShardSet> shards,
                                                       std::size_t max_member_bytes, bool in_order) {
  return std::make_unique<StreamStage>(std::move(shards), max_member_bytes, in_order);
}

}  // namespace conveyor::detail
