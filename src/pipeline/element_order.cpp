#include "src/pipeline/element_order.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/random.h"
#include "src/core/hex.h"
#include "src/pipeline/epoch_permutation.h"
#include "src/pipeline/stream_stage.h"
#include "src/sources/shard_set.h"

namespace conveyor::detail {

namespace {

using Stage = ElementOrder::Stage;

[[noreturn]] void bad_state(const std::string& what) {
  throw InvalidArgument("iterator state does not fit this dataset: " + what);
}

// A stage whose saved state is two words: the epoch of its last reset and its position in that epoch (the
// elements it has handed out since). The stage calls start() in its reset() (and its restore()) and
// advance() for each element its next() hands out.
class EpochPositionStage : public Stage {
 public:
  std::size_t words() const noexcept final { return 2; }
  void save(std::uint64_t* out) const noexcept final {
    out[0] = epoch_;
    out[1] = position_;
  }

 protected:
  std::uint64_t epoch() const noexcept { return epoch_; }
  std::uint64_t position() const noexcept { return position_; }
  void start(std::uint64_t epoch, std::uint64_t position = 0) noexcept {
    epoch_ = epoch;
    position_ = position;
  }
  // The position of the element being handed out; the next one's after it.
  std::uint64_t advance() noexcept { return position_++; }

 private:
  std::uint64_t epoch_ = 0, position_ = 0;
};

// A stage whose true state is what it holds back (a buffer, a padding element): it saves its epoch and
// position instead, and its restore resets, then takes that many again (index arithmetic upstream, nothing
// is read or decoded).
class ReplayedStage : public EpochPositionStage {
 public:
  // what: the stage in an error message ("the buffered shuffle").
  explicit ReplayedStage(const char* what) : what_(what) {}
  void restore(const std::uint64_t* in) final {
    reset(in[0]);
    for (std::uint64_t i = 0; i < in[1]; ++i)
      if (!next()) bad_state(std::string(what_) + " ends before position " + std::to_string(in[1]));
  }

 private:
  const char* const what_;
};

// 0, 1, ..., n - 1 in every epoch.
class SourceStage final : public EpochPositionStage {
 public:
  explicit SourceStage(std::uint64_t size) : size_(size) {}
  void reset(std::uint64_t epoch) override { start(epoch); }
  std::optional<OrderedElement> next() override {
    if (position() == size_) return std::nullopt;
    const std::uint64_t i = advance();
    return OrderedElement{i, epoch(), i, false, nullptr};
  }
  bool random_access() const noexcept override { return true; }
  std::uint64_t length() const noexcept override { return size_; }
  OrderedElement at(std::uint64_t epoch, std::uint64_t position) const noexcept override {
    return {position, epoch, position, false, nullptr};
  }
  std::optional<std::uint64_t> index_offset() const noexcept override { return 0; }
  void restore(const std::uint64_t* in) override {
    if (in[1] > size_) bad_state("source position " + std::to_string(in[1]) + " > " + std::to_string(size_));
    start(in[0], in[1]);
  }

 private:
  const std::uint64_t size_;
};

// The whole epoch in the order of a keyed permutation (seeded from seed and epoch): element p of the
// output is element perm(p) of the upstream's epoch, so the position is the whole state.
class PermutationStage final : public EpochPositionStage {
 public:
  PermutationStage(Stage& upstream, std::uint64_t seed) : upstream_(upstream), seed_(seed) {}
  void reset(std::uint64_t epoch) override {
    start(epoch);
    permutation_ = EpochPermutation(upstream_.length(), combine_seeds(seed_, epoch));
  }
  std::optional<OrderedElement> next() override {
    if (position() >= permutation_.size()) return std::nullopt;
    OrderedElement element = upstream_.at(epoch(), permutation_(position()));
    element.index = advance();
    return element;
  }
  bool random_access() const noexcept override { return true; }
  std::uint64_t length() const noexcept override { return upstream_.length(); }
  OrderedElement at(std::uint64_t epoch, std::uint64_t position) const noexcept override {
    const EpochPermutation permutation(upstream_.length(), combine_seeds(seed_, epoch));
    OrderedElement element = upstream_.at(epoch, permutation(position));
    element.index = position;
    return element;
  }
  std::optional<std::uint64_t> index_offset() const noexcept override { return 0; }
  void restore(const std::uint64_t* in) override {
    reset(in[0]);
    if (in[1] > permutation_.size())
      bad_state("shuffle position " + std::to_string(in[1]) + " > " + std::to_string(permutation_.size()));
    start(in[0], in[1]);
  }

 private:
  Stage& upstream_;
  const std::uint64_t seed_;
  EpochPermutation permutation_{0, 0};
};

// tf.data's buffered shuffle: hold `buffer_size` elements, emit a uniformly chosen one and put the next
// upstream element in its place. Seeded from (seed, epoch), so every epoch has its own order. The emitted
// element's index becomes its position in this stage's output, except over a streamed source: there each
// rank shuffles its own share, and the index stays the sample's place in the epoch's order of all shards
// (which every rank agrees on), so that a sample's seed does not depend on the world size. Its true state
// is the buffer; the saved state is (epoch, emitted) instead, and restore() replays that many draws (index
// arithmetic only over a random-access source; over a streamed one the stream stage reads them again).
class BufferedShuffleStage final : public ReplayedStage {
 public:
  BufferedShuffleStage(Stage& upstream, std::size_t buffer_size, std::uint64_t seed, bool renumber)
      : ReplayedStage("the buffered shuffle"),
        upstream_(upstream),
        buffer_size_(buffer_size),
        seed_(seed),
        renumber_(renumber),
        rng_(seed) {}
  void reset(std::uint64_t epoch) override {
    upstream_.reset(epoch);
    start(epoch);
    rng_ = Rng(combine_seeds(seed_, epoch), 0x5348'5546'464C'45ull);  // stream "SHUFFLE"
    buffer_.clear();
    filled_ = false;
  }
  std::optional<OrderedElement> next() override {
    if (!filled_) {
      buffer_.reserve(buffer_size_ < 65536 ? buffer_size_ : 65536);
      while (buffer_.size() < buffer_size_) {
        std::optional<OrderedElement> element = upstream_.next();
        if (!element) break;
        buffer_.push_back(std::move(*element));
      }
      filled_ = true;
    }
    if (buffer_.empty()) return std::nullopt;
    const std::size_t j = static_cast<std::size_t>(rng_.below(buffer_.size()));
    OrderedElement out = std::move(buffer_[j]);
    if (std::optional<OrderedElement> refill = upstream_.next()) {
      buffer_[j] = std::move(*refill);
    } else {
      buffer_[j] = std::move(buffer_.back());
      buffer_.pop_back();
    }
    const std::uint64_t position = advance();
    if (renumber_) out.index = position;
    return out;
  }

 private:
  Stage& upstream_;
  const std::size_t buffer_size_;
  const std::uint64_t seed_;
  const bool renumber_;
  Rng rng_;
  std::vector<OrderedElement> buffer_;
  bool filled_ = false;
};

// Restarts the upstream `count` times (or forever) with consecutive epoch numbers. Nested repeats
// number epochs outer * inner_count + inner.
class RepeatStage final : public Stage {
 public:
  RepeatStage(Stage& upstream, std::optional<std::uint64_t> count) : upstream_(upstream), count_(count) {}
  void reset(std::uint64_t epoch) override {
    base_ = count_ ? epoch * *count_ : 0;
    pass_ = 0;
    produced_in_pass_ = 0;
    if (!count_ || *count_ > 0) upstream_.reset(base_);
  }
  std::optional<OrderedElement> next() override {
    if (count_ && pass_ >= *count_) return std::nullopt;
    for (;;) {
      if (std::optional<OrderedElement> element = upstream_.next()) {
        ++produced_in_pass_;
        return element;
      }
      // An empty pass means every later pass is empty too: stop rather than spin forever.
      if (produced_in_pass_ == 0) {
        pass_ = count_.value_or(pass_ + 1);
        return std::nullopt;
      }
      ++pass_;
      if (count_ && pass_ >= *count_) return std::nullopt;
      produced_in_pass_ = 0;
      upstream_.reset(base_ + pass_);
    }
  }
  bool random_access() const noexcept override {
    const std::uint64_t n = upstream_.length();
    return count_ && upstream_.random_access() &&
           (n == 0 || *count_ <= std::numeric_limits<std::uint64_t>::max() / n);
  }
  std::uint64_t length() const noexcept override { return *count_ * upstream_.length(); }
  OrderedElement at(std::uint64_t epoch, std::uint64_t position) const noexcept override {
    const std::uint64_t n = upstream_.length();
    return upstream_.at(epoch * *count_ + position / n, position % n);
  }
  std::size_t words() const noexcept override { return 3; }
  void save(std::uint64_t* out) const noexcept override {
    out[0] = base_;
    out[1] = pass_;
    out[2] = produced_in_pass_;
  }
  void restore(const std::uint64_t* in) override {
    if (count_ && in[1] > *count_)
      bad_state("repeat pass " + std::to_string(in[1]) + " > " + std::to_string(*count_));
    base_ = in[0];
    pass_ = in[1];
    produced_in_pass_ = in[2];
  }
  // After an elastic restore this shard may have nothing left in the pass others had data in: the pass
  // is not empty, and an empty remainder must not end the stream.
  void mark_pass_started() noexcept {
    if (produced_in_pass_ == 0) produced_in_pass_ = 1;
  }

 private:
  Stage& upstream_;
  const std::optional<std::uint64_t> count_;
  std::uint64_t base_ = 0, pass_ = 0, produced_in_pass_ = 0;
};

// Keeps the elements whose index falls in this shard: the shards of one order partition it. After an
// elastic restore it also skips the elements the earlier run's shards consumed.
class ShardStage final : public Stage {
 public:
  ShardStage(Stage& upstream, std::size_t num_shards, std::size_t index)
      : upstream_(upstream), num_shards_(num_shards), index_(index) {}
  void reset(std::uint64_t epoch) override { upstream_.reset(epoch); }
  std::optional<OrderedElement> next() override {
    while (std::optional<OrderedElement> element = upstream_.next()) {
      if (element->index % num_shards_ != index_ || consumed(*element)) continue;
      last_ = {true, element->epoch, element->index};
      return element;
    }
    return std::nullopt;
  }
  bool random_access() const noexcept override {
    return upstream_.random_access() && upstream_.index_offset() && consumed_.empty();
  }
  std::uint64_t length() const noexcept override {
    const std::uint64_t n = upstream_.length(), first = first_position();
    return n > first ? (n - first - 1) / num_shards_ + 1 : 0;
  }
  OrderedElement at(std::uint64_t epoch, std::uint64_t position) const noexcept override {
    return upstream_.at(epoch, first_position() + position * num_shards_);
  }
  std::size_t words() const noexcept override { return 3; }
  void save(std::uint64_t* out) const noexcept override {
    out[0] = last_.any ? 1 : 0;
    out[1] = last_.epoch;
    out[2] = last_.index;
  }
  void restore(const std::uint64_t* in) override {
    if (in[0] > 1) bad_state("shard frontier flag " + std::to_string(in[0]));
    last_ = {in[0] == 1, in[1], in[2]};
  }
  void exclude(std::vector<ConsumedElements> consumed, bool keep_frontier) {
    consumed_ = std::move(consumed);
    if (!keep_frontier) last_ = {};
  }

 private:
  // The first upstream position whose index falls in this shard.
  std::uint64_t first_position() const noexcept {
    const std::uint64_t offset = *upstream_.index_offset() % num_shards_;
    return (index_ + num_shards_ - offset) % num_shards_;
  }
  bool consumed(const OrderedElement& element) {
    if (consumed_.empty()) return false;
    bool any_matters = false;
    for (const ConsumedElements& set : consumed_) {
      if (set.contains(element.epoch, element.index)) return true;
      any_matters = any_matters || set.matters_after({true, element.epoch, element.index});
    }
    if (!any_matters) consumed_.clear();  // past every frontier: elements only move forward from here
    return false;
  }

  Stage& upstream_;
  const std::uint64_t num_shards_, index_;
  ShardFrontier last_;
  std::vector<ConsumedElements> consumed_;
};

// Element q of each epoch's stream goes to shard q % num_shards, and the shards come out even: with pad a
// shard that is one short repeats the element that torch's DistributedSampler would give it (position
// p >= n of the padded order holds element p mod n, so one of the epoch's first num_shards elements);
// with drop each shard's element of the last, incomplete block of num_shards is held back until the block
// completes, which it never does. The epoch's length is only known at its end (when the upstream runs dry
// or the next epoch begins), so pad keeps the epoch's first num_shards elements until then.
//
// State: what it holds back (the epoch's first elements, the held or looked-ahead element) are elements,
// not words, so like the buffered shuffle it saves (epoch of its last reset, elements delivered since) and
// restore() replays that many from the reset: index arithmetic over a random-access source, a second read
// over a streamed one. Put it before repeat() (as shard(ranks) after shuffle() is meant to be), so that a
// replay covers one epoch.
//
// Random access: when the upstream has it and holds one epoch per reset (no repeat before it), position p of
// this shard is upstream position p * num_shards + index, and with pad a position past the epoch's end is
// the padded order's p mod n, as above: what next() gives, found without the elements before it.
class EvenShardStage final : public ReplayedStage {
 public:
  EvenShardStage(Stage& upstream, std::size_t num_shards, std::size_t index, ShardRemainder remainder,
                 bool one_epoch_upstream)
      : ReplayedStage("the even shard"),
        upstream_(upstream),
        num_shards_(num_shards),
        index_(index),
        remainder_(remainder),
        random_access_(one_epoch_upstream && upstream.random_access()) {
    first_.reserve(num_shards);
  }
  bool random_access() const noexcept override { return random_access_; }
  std::uint64_t length() const noexcept override {
    const std::uint64_t n = upstream_.length();
    if (remainder_ == ShardRemainder::drop) return n / num_shards_;
    return n == 0 ? 0 : (n + num_shards_ - 1) / num_shards_;
  }
  OrderedElement at(std::uint64_t epoch, std::uint64_t position) const noexcept override {
    const std::uint64_t n = upstream_.length(), p = position * num_shards_ + index_;
    if (p < n) return upstream_.at(epoch, p);
    OrderedElement element = upstream_.at(epoch, p % n);  // pad: one of the epoch's first elements again
    element.padding = true;
    return element;
  }
  void reset(std::uint64_t epoch) override {
    upstream_.reset(epoch);
    start(epoch);
    lookahead_.reset();
    padding_.reset();
    ended_ = false;
    start_epoch();
  }
  std::optional<OrderedElement> next() override {
    std::optional<OrderedElement> element = pull();
    if (element) advance();
    return element;
  }

 private:
  std::optional<OrderedElement> pull() {
    for (;;) {
      if (padding_) return std::exchange(padding_, std::nullopt);
      std::optional<OrderedElement> element = std::exchange(lookahead_, std::nullopt);
      if (!element && !ended_) {
        element = upstream_.next();
        ended_ = !element;
      }
      if (element && (position_ == 0 || element->epoch == epoch_)) {
        if (std::optional<OrderedElement> mine = take(std::move(*element))) return mine;
        continue;
      }
      // The epoch is over: `element` is the next epoch's first, or there is none.
      if (position_ > 0) end_epoch();
      if (!element) return padding_ ? std::exchange(padding_, std::nullopt) : std::nullopt;
      lookahead_ = std::move(element);
    }
  }

  void start_epoch() {
    position_ = 0;
    first_.clear();
    held_.reset();
  }

  // Counts one element of the epoch; returns it when it is this shard's to deliver now.
  std::optional<OrderedElement> take(OrderedElement element) {
    if (position_ == 0) epoch_ = element.epoch;
    const std::uint64_t q = position_++;
    const bool mine = q % num_shards_ == index_;
    if (remainder_ == ShardRemainder::pad) {
      if (first_.size() < num_shards_) first_.push_back(copy_of(element));
      if (mine) return element;
      return std::nullopt;
    }
    if (mine) held_ = std::move(element);
    if (q % num_shards_ == num_shards_ - 1 && held_) return std::exchange(held_, std::nullopt);
    return std::nullopt;
  }

  void end_epoch() {
    const std::uint64_t n = position_;
    const std::uint64_t short_by = n % num_shards_;  // elements in the last, incomplete block
    if (remainder_ == ShardRemainder::pad && short_by != 0 && index_ >= short_by) {
      const std::uint64_t p = n - short_by + index_;  // this shard's position in the padded order
      padding_ = copy_of(first_[p % n]);
      padding_->padding = true;
    }
    start_epoch();
  }

  Stage& upstream_;
  const std::uint64_t num_shards_, index_;
  const ShardRemainder remainder_;
  const bool random_access_;
  std::uint64_t epoch_ = 0, position_ = 0;
  std::vector<OrderedElement> first_;        // pad: the epoch's first num_shards elements
  std::optional<OrderedElement> held_;       // drop: this shard's element of the current block
  std::optional<OrderedElement> lookahead_;  // the next epoch's first element, seen while closing this one
  std::optional<OrderedElement> padding_;    // pad: this shard's repeat, due at the epoch's end
  bool ended_ = false;                       // the upstream ran dry (until the next reset)
};

// skip(n) and take(n): a count and how many of it the epoch has used so far, their whole state.
class CountingStage : public Stage {
 public:
  void reset(std::uint64_t epoch) override {
    upstream_.reset(epoch);
    used_ = 0;
  }
  bool random_access() const noexcept override { return upstream_.random_access(); }
  std::size_t words() const noexcept override { return 1; }
  void save(std::uint64_t* out) const noexcept override { out[0] = used_; }
  void restore(const std::uint64_t* in) override {
    if (in[0] > count_)
      bad_state(std::string(what_) + " " + std::to_string(in[0]) + " > " + std::to_string(count_));
    used_ = in[0];
  }

 protected:
  CountingStage(Stage& upstream, std::uint64_t count, const char* what)
      : upstream_(upstream), count_(count), what_(what) {}
  Stage& upstream_;
  const std::uint64_t count_;
  std::uint64_t used_ = 0;

 private:
  const char* what_;  // the count's name in a bad checkpoint's message
};

class SkipStage final : public CountingStage {
 public:
  SkipStage(Stage& upstream, std::uint64_t count) : CountingStage(upstream, count, "skipped") {}
  std::optional<OrderedElement> next() override {
    for (; used_ < count_; ++used_)
      if (!upstream_.next()) return std::nullopt;
    return upstream_.next();
  }
  std::uint64_t length() const noexcept override {
    const std::uint64_t n = upstream_.length();
    return n > count_ ? n - count_ : 0;
  }
  OrderedElement at(std::uint64_t epoch, std::uint64_t position) const noexcept override {
    return upstream_.at(epoch, position + count_);
  }
  std::optional<std::uint64_t> index_offset() const noexcept override {
    const std::optional<std::uint64_t> offset = upstream_.index_offset();
    return offset ? std::optional<std::uint64_t>(*offset + count_) : std::nullopt;
  }
};

class TakeStage final : public CountingStage {
 public:
  TakeStage(Stage& upstream, std::uint64_t count) : CountingStage(upstream, count, "taken") {}
  std::optional<OrderedElement> next() override {
    if (used_ == count_) return std::nullopt;
    std::optional<OrderedElement> element = upstream_.next();
    if (element) ++used_;
    return element;
  }
  std::uint64_t length() const noexcept override { return std::min(upstream_.length(), count_); }
  OrderedElement at(std::uint64_t epoch, std::uint64_t position) const noexcept override {
    return upstream_.at(epoch, position);
  }
  std::optional<std::uint64_t> index_offset() const noexcept override { return upstream_.index_offset(); }
};

// Positions [first, first + count) of one epoch of a random-access upstream, each found by position (so
// nothing before the range is produced), whatever epoch the chain is reset to: the range names its epoch.
class RangeStage final : public Stage {
 public:
  RangeStage(Stage& upstream, const RangeOrder& range) : upstream_(upstream), range_(range) {}
  void reset(std::uint64_t /*epoch*/) override { delivered_ = 0; }
  std::optional<OrderedElement> next() override {
    if (delivered_ >= length()) return std::nullopt;
    return upstream_.at(range_.epoch, range_.first + delivered_++);
  }
  bool random_access() const noexcept override { return false; }  // nothing may follow it (Dataset)
  std::uint64_t length() const noexcept override {
    const std::uint64_t n = upstream_.length();
    return range_.first >= n ? 0 : std::min(range_.count, n - range_.first);
  }
  std::size_t words() const noexcept override { return 1; }
  void save(std::uint64_t* out) const noexcept override { out[0] = delivered_; }
  void restore(const std::uint64_t* in) override {
    if (in[0] > length())
      bad_state("range position " + std::to_string(in[0]) + " > " + std::to_string(length()));
    delivered_ = in[0];
  }

 private:
  Stage& upstream_;
  const RangeOrder range_;
  std::uint64_t delivered_ = 0;
};

bool is_whole_epoch(const ShuffleOrder& shuffle) { return shuffle.buffer_size == Dataset::whole_epoch; }

// The line describe() gives the source: a streamed one names what decides its stream (the shards, their
// order and this rank's share), so that a state refuses another set of shards or another rank.
std::string describe_source(const Source& source) {
  // A SampleSource names itself, so that a state saved over another source is refused.
  if (const auto& custom = source.sample_source())
    return "source " + std::to_string(source.size()) + " " + custom->describe();
  if (!source.streamed()) return "source " + std::to_string(source.size());
  const ShardSet& set = *source.shard_set();
  const TarShardOptions& options = set.options;
  return "tar shards " + std::to_string(set.shards.size()) + " samples " +
         (set.counted() ? std::to_string(set.total()) : std::string("unknown")) + " rank " +
         std::to_string(options.ranks.rank) + " of " + std::to_string(options.ranks.world_size) + " " +
         to_string(options.remainder) +
         (options.shuffle_shards ? " shard order seed " + hex(options.seed)
                                 : std::string(" shard order given"));
}

}  // namespace

OrderedElement copy_of(const OrderedElement& element) {
  OrderedElement copy{element.source_index, element.epoch, element.index, element.padding, nullptr};
  if (element.streamed) copy.streamed = element.streamed.get_deleter().pool->copy(*element.streamed);
  return copy;
}

bool ShardFrontier::before(const ShardFrontier& other) const noexcept {
  if (!any) return other.any;
  if (!other.any) return false;
  return epoch != other.epoch ? epoch < other.epoch : index < other.index;
}

bool ConsumedElements::contains(std::uint64_t epoch, std::uint64_t index) const noexcept {
  if (frontiers.empty()) return false;
  const ShardFrontier& frontier = frontiers[index % frontiers.size()];
  return frontier.any && !frontier.before({true, epoch, index});
}

bool ConsumedElements::matters_after(const ShardFrontier& position) const noexcept {
  for (const ShardFrontier& frontier : frontiers)
    if (position.before(frontier)) return true;
  return false;
}

ElementOrder::ElementOrder(const Source& source, const std::vector<OrderOp>& ops,
                           std::size_t max_member_bytes, bool in_order) {
  if (source.streamed()) {
    build(make_stream_stage(source.shard_set(), max_member_bytes, in_order), source.shard_set().get(), ops);
  } else {
    build(std::make_unique<SourceStage>(source.size()), nullptr, ops);
  }
}

ElementOrder::ElementOrder(std::size_t source_size, const std::vector<OrderOp>& ops) {
  build(std::make_unique<SourceStage>(source_size), nullptr, ops);
}

void ElementOrder::build(std::unique_ptr<Stage> first, const ShardSet* streamed,
                         const std::vector<OrderOp>& ops) {
  stages_.push_back(std::move(first));
  bool repeated = false, after_shard = false, even_shard = false;
  std::size_t shards = 0;
  for (const OrderOp& op : ops) {
    if (std::holds_alternative<RangeOrder>(op) && &op != &ops.back())
      throw InvalidArgument("Dataset::epoch_range: no ordering method may follow it");
    Stage& upstream = *stages_.back();
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, ShuffleOrder>) {
            const std::uint64_t seed = o.seed.value_or(0);  // make_plan resolved it; 0 only when checking
            if (is_whole_epoch(o)) {
              if (!upstream.random_access())
                throw InvalidArgument(
                    "Dataset::shuffle(): the whole-epoch shuffle needs random access to the stream before "
                    "it, and tar shards (read front to back), a buffered shuffle, a repeat() forever or a "
                    "shard of a shard have none; use shuffle(buffer_size) there, or shuffle before them");
              stages_.push_back(std::make_unique<PermutationStage>(upstream, seed));
            } else {
              stages_.push_back(
                  std::make_unique<BufferedShuffleStage>(upstream, o.buffer_size, seed, streamed == nullptr));
            }
            if (after_shard && !elastic_problem_)
              elastic_problem_ = "a shuffle after shard() orders each shard on its own";
            if (repeated && shards == 0 && !elastic_problem_)
              elastic_problem_ = "a shuffle after repeat() mixes epochs before shard()";
          } else if constexpr (std::is_same_v<T, RepeatOrder>) {
            stages_.push_back(std::make_unique<RepeatStage>(upstream, o.count));
            repeated = true;
          } else if constexpr (std::is_same_v<T, ShardOrder>) {
            if (o.remainder == ShardRemainder::uneven) {
              shard_stage_ = stages_.size();
              stages_.push_back(std::make_unique<ShardStage>(upstream, o.num_shards, o.index));
            } else {
              stages_.push_back(
                  std::make_unique<EvenShardStage>(upstream, o.num_shards, o.index, o.remainder, !repeated));
              even_shard = true;
            }
            ++shards;
            after_shard = true;
          } else if constexpr (std::is_same_v<T, SkipOrder>) {
            stages_.push_back(std::make_unique<SkipStage>(upstream, o.count));
            if (after_shard && !elastic_problem_)
              elastic_problem_ = "a skip() after shard() counts per shard";
          } else if constexpr (std::is_same_v<T, RangeOrder>) {
            if (!upstream.random_access())
              throw InvalidArgument(
                  "Dataset::epoch_range: needs random access to the stream before it: the source, shuffle(), "
                  "shard (pad and drop: before any repeat), skip and take have it; tar shards read front to "
                  "back, a buffered shuffle and repeat() have none");
            stages_.push_back(std::make_unique<RangeStage>(upstream, o));
            if (!elastic_problem_) elastic_problem_ = "an epoch_range() is one part of one epoch";
          } else {
            stages_.push_back(std::make_unique<TakeStage>(upstream, o.count));
            if (after_shard && !elastic_problem_)
              elastic_problem_ = "a take() after shard() counts per shard";
          }
        },
        op);
  }
  if (shards != 1) {
    shard_stage_.reset();
    elastic_problem_ = shards == 0 ? "the dataset has no shard() (use shard(1, 0) for one shard)"
                                   : "the dataset has more than one shard()";
  } else if (even_shard) {
    shard_stage_.reset();
    elastic_problem_ =
        "shard() with ShardRemainder pad or drop evens the shards out per epoch, so its state holds only at "
        "the same shard count";
  }
  // Checked last: the reasons above are about the ops, this one about the source, and either suffices.
  if (streamed != nullptr && streamed->options.ranks.world_size > 1)
    elastic_problem_ =
        "tar shards split across ranks by TarShardOptions::ranks: a state restores only at the same rank and "
        "world size";
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    if (shard_stage_ && i == *shard_stage_) shard_offset_ = state_words_;
    state_words_ += stages_[i]->words();
  }
  stages_.back()->reset(0);
}

ElementOrder::~ElementOrder() {
  // Last stage first: the later stages hold elements whose streamed samples belong to the first's pool.
  while (!stages_.empty()) stages_.pop_back();
}

std::optional<OrderedElement> ElementOrder::next() { return stages_.back()->next(); }

void ElementOrder::cancel() { stages_.front()->cancel(); }

void ElementOrder::save(std::span<std::uint64_t> words) const noexcept {
  std::uint64_t* out = words.data();
  for (const auto& stage : stages_) {
    stage->save(out);
    out += stage->words();
  }
}

void ElementOrder::restore(std::span<const std::uint64_t> words) {
  if (words.size() != state_words_)
    bad_state(std::to_string(words.size()) + " words of stage state, this chain has " +
              std::to_string(state_words_));
  // Upstream first: a stage that replays (the buffered shuffle) leaves its upstream where it was saved.
  const std::uint64_t* in = words.data();
  for (const auto& stage : stages_) {
    stage->restore(in);
    in += stage->words();
  }
}

void ElementOrder::exclude(std::vector<ConsumedElements> consumed, bool keep_frontier) {
  if (elastic_problem_)
    throw InvalidArgument("this dataset cannot take an elastic restore: " + *elastic_problem_);
  static_cast<ShardStage&>(*stages_[*shard_stage_]).exclude(std::move(consumed), keep_frontier);
  for (std::size_t i = *shard_stage_ + 1; i < stages_.size(); ++i)
    static_cast<RepeatStage&>(*stages_[i]).mark_pass_started();  // only repeats follow (elastic_problem)
}

std::optional<ShardFrontier> ElementOrder::shard_frontier(std::span<const std::uint64_t> words) const {
  if (!shard_stage_ || words.size() != state_words_) return std::nullopt;
  return ShardFrontier{words[shard_offset_] == 1, words[shard_offset_ + 1], words[shard_offset_ + 2]};
}

std::optional<std::string> ElementOrder::elastic_problem() const { return elastic_problem_; }

std::vector<std::string> ElementOrder::describe(const Source& source, const std::vector<OrderOp>& ops) {
  std::vector<std::string> lines{describe_source(source)};
  for (const OrderOp& op : ops) {
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, ShuffleOrder>) {
            lines.push_back((is_whole_epoch(o) ? std::string("shuffle whole-epoch")
                                               : "shuffle buffer " + std::to_string(o.buffer_size)) +
                            " seed " + hex(o.seed.value_or(0)));
          } else if constexpr (std::is_same_v<T, RepeatOrder>) {
            lines.push_back(o.count ? "repeat " + std::to_string(*o.count) : std::string("repeat forever"));
          } else if constexpr (std::is_same_v<T, ShardOrder>) {
            lines.push_back("shard " + std::to_string(o.index) + " of " + std::to_string(o.num_shards) +
                            (o.remainder == ShardRemainder::uneven
                                 ? std::string()
                                 : std::string(" ") + to_string(o.remainder)));
          } else if constexpr (std::is_same_v<T, SkipOrder>) {
            lines.push_back("skip " + std::to_string(o.count));
          } else if constexpr (std::is_same_v<T, RangeOrder>) {
            lines.push_back("epoch " + std::to_string(o.epoch) + " positions " + std::to_string(o.first) +
                            " + " + std::to_string(o.count));
          } else {
            lines.push_back("take " + std::to_string(o.count));
          }
        },
        op);
  }
  return lines;
}

}  // namespace conveyor::detail
