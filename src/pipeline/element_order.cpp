#include "src/pipeline/element_order.h"

#include <cinttypes>
#include <cstdio>
#include <limits>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/random.h"
#include "src/pipeline/epoch_permutation.h"

namespace conveyor::detail {

// Pull-based, with an O(1) state (save/restore of its own words only: each stage restores itself) and,
// where the stage allows it, random access to its epoch (length(), at()) for a whole-epoch shuffle after it.
class ElementOrder::Stage {
 public:
  virtual ~Stage() = default;
  virtual void reset(std::uint64_t epoch) = 0;
  virtual std::optional<OrderedElement> next() = 0;

  // Random access: the same elements next() gives after reset(epoch), by position.
  virtual bool random_access() const noexcept { return false; }
  virtual std::uint64_t length() const noexcept { return 0; }
  virtual OrderedElement at(std::uint64_t /*epoch*/, std::uint64_t /*position*/) const noexcept { return {}; }
  // When set, at(e, p).index == p + *index_offset() (what a shard needs to find its elements by position).
  virtual std::optional<std::uint64_t> index_offset() const noexcept { return std::nullopt; }

  virtual std::size_t words() const noexcept = 0;
  virtual void save(std::uint64_t* out) const noexcept = 0;
  virtual void restore(const std::uint64_t* in) = 0;
};

namespace {

using Stage = ElementOrder::Stage;

[[noreturn]] void bad_state(const std::string& what) {
  throw InvalidArgument("iterator state does not fit this dataset: " + what);
}

// 0, 1, ..., n - 1 in every epoch.
class SourceStage final : public Stage {
 public:
  explicit SourceStage(std::uint64_t size) : size_(size) {}
  void reset(std::uint64_t epoch) override {
    epoch_ = epoch;
    position_ = 0;
  }
  std::optional<OrderedElement> next() override {
    if (position_ == size_) return std::nullopt;
    const std::uint64_t i = position_++;
    return OrderedElement{i, epoch_, i};
  }
  bool random_access() const noexcept override { return true; }
  std::uint64_t length() const noexcept override { return size_; }
  OrderedElement at(std::uint64_t epoch, std::uint64_t position) const noexcept override {
    return {position, epoch, position};
  }
  std::optional<std::uint64_t> index_offset() const noexcept override { return 0; }
  std::size_t words() const noexcept override { return 2; }
  void save(std::uint64_t* out) const noexcept override {
    out[0] = epoch_;
    out[1] = position_;
  }
  void restore(const std::uint64_t* in) override {
    if (in[1] > size_) bad_state("source position " + std::to_string(in[1]) + " > " + std::to_string(size_));
    epoch_ = in[0];
    position_ = in[1];
  }

 private:
  const std::uint64_t size_;
  std::uint64_t epoch_ = 0, position_ = 0;
};

// The whole epoch in the order of a keyed permutation (seeded from seed and epoch): element p of the
// output is element perm(p) of the upstream's epoch, so the position is the whole state.
class PermutationStage final : public Stage {
 public:
  PermutationStage(Stage& upstream, std::uint64_t seed) : upstream_(upstream), seed_(seed) {}
  void reset(std::uint64_t epoch) override {
    epoch_ = epoch;
    position_ = 0;
    permutation_ = EpochPermutation(upstream_.length(), combine_seeds(seed_, epoch));
  }
  std::optional<OrderedElement> next() override {
    if (position_ >= permutation_.size()) return std::nullopt;
    OrderedElement element = upstream_.at(epoch_, permutation_(position_));
    element.index = position_++;
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
  std::size_t words() const noexcept override { return 2; }
  void save(std::uint64_t* out) const noexcept override {
    out[0] = epoch_;
    out[1] = position_;
  }
  void restore(const std::uint64_t* in) override {
    reset(in[0]);
    if (in[1] > permutation_.size())
      bad_state("shuffle position " + std::to_string(in[1]) + " > " + std::to_string(permutation_.size()));
    position_ = in[1];
  }

 private:
  Stage& upstream_;
  const std::uint64_t seed_;
  std::uint64_t epoch_ = 0, position_ = 0;
  EpochPermutation permutation_{0, 0};
};

// tf.data's buffered shuffle: hold `buffer_size` elements, emit a uniformly chosen one and put the next
// upstream element in its place. Seeded from (seed, epoch), so every epoch has its own order. The emitted
// element's index becomes its position in this stage's output. Its true state is the buffer; the saved
// state is (epoch, emitted) instead, and restore() replays that many draws (index arithmetic only).
class BufferedShuffleStage final : public Stage {
 public:
  BufferedShuffleStage(Stage& upstream, std::size_t buffer_size, std::uint64_t seed)
      : upstream_(upstream), buffer_size_(buffer_size), seed_(seed), rng_(seed) {}
  void reset(std::uint64_t epoch) override {
    upstream_.reset(epoch);
    epoch_ = epoch;
    rng_ = Rng(combine_seeds(seed_, epoch), 0x5348'5546'464C'45ull);  // stream "SHUFFLE"
    buffer_.clear();
    filled_ = false;
    emitted_ = 0;
  }
  std::optional<OrderedElement> next() override {
    if (!filled_) {
      buffer_.reserve(buffer_size_ < 65536 ? buffer_size_ : 65536);
      while (buffer_.size() < buffer_size_) {
        std::optional<OrderedElement> element = upstream_.next();
        if (!element) break;
        buffer_.push_back(*element);
      }
      filled_ = true;
    }
    if (buffer_.empty()) return std::nullopt;
    const std::size_t j = static_cast<std::size_t>(rng_.below(buffer_.size()));
    OrderedElement out = buffer_[j];
    if (std::optional<OrderedElement> refill = upstream_.next()) {
      buffer_[j] = *refill;
    } else {
      buffer_[j] = buffer_.back();
      buffer_.pop_back();
    }
    out.index = emitted_++;
    return out;
  }
  std::size_t words() const noexcept override { return 2; }
  void save(std::uint64_t* out) const noexcept override {
    out[0] = epoch_;
    out[1] = emitted_;
  }
  void restore(const std::uint64_t* in) override {
    reset(in[0]);
    for (std::uint64_t i = 0; i < in[1]; ++i)
      if (!next()) bad_state("the buffered shuffle ends before position " + std::to_string(in[1]));
  }

 private:
  Stage& upstream_;
  const std::size_t buffer_size_;
  const std::uint64_t seed_;
  Rng rng_;
  std::uint64_t epoch_ = 0;
  std::vector<OrderedElement> buffer_;
  bool filled_ = false;
  std::uint64_t emitted_ = 0;
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

class SkipStage final : public Stage {
 public:
  SkipStage(Stage& upstream, std::uint64_t count) : upstream_(upstream), count_(count) {}
  void reset(std::uint64_t epoch) override {
    upstream_.reset(epoch);
    skipped_ = 0;
  }
  std::optional<OrderedElement> next() override {
    for (; skipped_ < count_; ++skipped_)
      if (!upstream_.next()) return std::nullopt;
    return upstream_.next();
  }
  bool random_access() const noexcept override { return upstream_.random_access(); }
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
  std::size_t words() const noexcept override { return 1; }
  void save(std::uint64_t* out) const noexcept override { out[0] = skipped_; }
  void restore(const std::uint64_t* in) override {
    if (in[0] > count_) bad_state("skipped " + std::to_string(in[0]) + " > " + std::to_string(count_));
    skipped_ = in[0];
  }

 private:
  Stage& upstream_;
  const std::uint64_t count_;
  std::uint64_t skipped_ = 0;
};

class TakeStage final : public Stage {
 public:
  TakeStage(Stage& upstream, std::uint64_t count) : upstream_(upstream), count_(count) {}
  void reset(std::uint64_t epoch) override {
    upstream_.reset(epoch);
    taken_ = 0;
  }
  std::optional<OrderedElement> next() override {
    if (taken_ == count_) return std::nullopt;
    std::optional<OrderedElement> element = upstream_.next();
    if (element) ++taken_;
    return element;
  }
  bool random_access() const noexcept override { return upstream_.random_access(); }
  std::uint64_t length() const noexcept override { return std::min(upstream_.length(), count_); }
  OrderedElement at(std::uint64_t epoch, std::uint64_t position) const noexcept override {
    return upstream_.at(epoch, position);
  }
  std::optional<std::uint64_t> index_offset() const noexcept override { return upstream_.index_offset(); }
  std::size_t words() const noexcept override { return 1; }
  void save(std::uint64_t* out) const noexcept override { out[0] = taken_; }
  void restore(const std::uint64_t* in) override {
    if (in[0] > count_) bad_state("taken " + std::to_string(in[0]) + " > " + std::to_string(count_));
    taken_ = in[0];
  }

 private:
  Stage& upstream_;
  const std::uint64_t count_;
  std::uint64_t taken_ = 0;
};

bool is_whole_epoch(const ShuffleOrder& shuffle) { return shuffle.buffer_size == Dataset::whole_epoch; }

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016" PRIx64, value);
  return text;
}

}  // namespace

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

ElementOrder::ElementOrder(std::size_t source_size, const std::vector<OrderOp>& ops) {
  stages_.push_back(std::make_unique<SourceStage>(source_size));
  bool repeated = false, after_shard = false;
  std::size_t shards = 0;
  for (const OrderOp& op : ops) {
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
                    "it, "
                    "and a buffered shuffle, a repeat() forever or a shard of a shard has none; use "
                    "shuffle(buffer_size) there, or shuffle before them");
              stages_.push_back(std::make_unique<PermutationStage>(upstream, seed));
            } else {
              stages_.push_back(std::make_unique<BufferedShuffleStage>(upstream, o.buffer_size, seed));
            }
            if (after_shard && !elastic_problem_)
              elastic_problem_ = "a shuffle after shard() orders each shard on its own";
            if (repeated && shards == 0 && !elastic_problem_)
              elastic_problem_ = "a shuffle after repeat() mixes epochs before shard()";
          } else if constexpr (std::is_same_v<T, RepeatOrder>) {
            stages_.push_back(std::make_unique<RepeatStage>(upstream, o.count));
            repeated = true;
          } else if constexpr (std::is_same_v<T, ShardOrder>) {
            shard_stage_ = stages_.size();
            stages_.push_back(std::make_unique<ShardStage>(upstream, o.num_shards, o.index));
            ++shards;
            after_shard = true;
          } else if constexpr (std::is_same_v<T, SkipOrder>) {
            stages_.push_back(std::make_unique<SkipStage>(upstream, o.count));
            if (after_shard && !elastic_problem_)
              elastic_problem_ = "a skip() after shard() counts per shard";
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
  }
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    if (shard_stage_ && i == *shard_stage_) shard_offset_ = state_words_;
    state_words_ += stages_[i]->words();
  }
  stages_.back()->reset(0);
}

ElementOrder::~ElementOrder() = default;

std::optional<OrderedElement> ElementOrder::next() { return stages_.back()->next(); }

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

std::vector<std::string> ElementOrder::describe(std::size_t source_size, const std::vector<OrderOp>& ops) {
  std::vector<std::string> lines{"source " + std::to_string(source_size)};
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
            lines.push_back("shard " + std::to_string(o.index) + " of " + std::to_string(o.num_shards));
          } else if constexpr (std::is_same_v<T, SkipOrder>) {
            lines.push_back("skip " + std::to_string(o.count));
          } else {
            lines.push_back("take " + std::to_string(o.count));
          }
        },
        op);
  }
  return lines;
}

}  // namespace conveyor::detail
