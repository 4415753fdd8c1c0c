#include "src/pipeline/element_order.h"

#include <optional>
#include <utility>

#include "conveyor/random.h"
#include "src/pipeline/stream_stage.h"

namespace conveyor::detail {
namespace {

using Stage = ElementOrder::Stage;

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
    return OrderedElement{i, epoch_, i, false, nullptr};
  }

 private:
  const std::uint64_t size_;
  std::uint64_t epoch_ = 0, position_ = 0;
};

// tf.data's buffered shuffle: hold `buffer_size` elements, emit a uniformly chosen one and put the next
// upstream element in its place. Seeded from (seed, epoch), so every epoch has its own order. The emitted
// element's index becomes its position in this stage's output, except over a streamed source: there each
// rank shuffles its own share, and the index stays the sample's place in the epoch's order of all shards
// (which every rank agrees on), so that a sample's seed does not depend on the world size.
class ShuffleStage final : public Stage {
 public:
  ShuffleStage(Stage& upstream, std::size_t buffer_size, std::uint64_t seed, bool renumber)
      : upstream_(upstream), buffer_size_(buffer_size), seed_(seed), renumber_(renumber), rng_(seed) {}
  void reset(std::uint64_t epoch) override {
    upstream_.reset(epoch);
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
    if (renumber_) out.index = emitted_;
    ++emitted_;
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

 private:
  Stage& upstream_;
  const std::optional<std::uint64_t> count_;
  std::uint64_t base_ = 0, pass_ = 0, produced_in_pass_ = 0;
};

// Keeps the elements whose index falls in this shard: the shards of one order partition it.
class ShardStage final : public Stage {
 public:
  ShardStage(Stage& upstream, std::size_t num_shards, std::size_t index)
      : upstream_(upstream), num_shards_(num_shards), index_(index) {}
  void reset(std::uint64_t epoch) override { upstream_.reset(epoch); }
  std::optional<OrderedElement> next() override {
    while (std::optional<OrderedElement> element = upstream_.next())
      if (element->index % num_shards_ == index_) return element;
    return std::nullopt;
  }

 private:
  Stage& upstream_;
  const std::uint64_t num_shards_, index_;
};

// Element q of each epoch's stream goes to shard q % num_shards, and the shards come out even: with pad a
// shard that is one short repeats the element that torch's DistributedSampler would give it (position
// p >= n of the padded order holds element p mod n, so one of the epoch's first num_shards elements);
// with drop each shard's element of the last, incomplete block of num_shards is held back until the block
// completes, which it never does. The epoch's length is only known at its end (when the upstream runs dry
// or the next epoch begins), so pad keeps the epoch's first num_shards elements until then.
class EvenShardStage final : public Stage {
 public:
  EvenShardStage(Stage& upstream, std::size_t num_shards, std::size_t index, ShardRemainder remainder)
      : upstream_(upstream), num_shards_(num_shards), index_(index), remainder_(remainder) {
    first_.reserve(num_shards);
  }
  void reset(std::uint64_t epoch) override {
    upstream_.reset(epoch);
    lookahead_.reset();
    padding_.reset();
    ended_ = false;
    start_epoch();
  }
  std::optional<OrderedElement> next() override {
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

 private:
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
  std::uint64_t epoch_ = 0, position_ = 0;
  std::vector<OrderedElement> first_;        // pad: the epoch's first num_shards elements
  std::optional<OrderedElement> held_;       // drop: this shard's element of the current block
  std::optional<OrderedElement> lookahead_;  // the next epoch's first element, seen while closing this one
  std::optional<OrderedElement> padding_;    // pad: this shard's repeat, due at the epoch's end
  bool ended_ = false;                       // the upstream ran dry (until the next reset)
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

 private:
  Stage& upstream_;
  const std::uint64_t count_;
  std::uint64_t taken_ = 0;
};

}  // namespace

OrderedElement copy_of(const OrderedElement& element) {
  OrderedElement copy{element.source_index, element.epoch, element.index, element.padding, nullptr};
  if (element.streamed) copy.streamed = element.streamed.get_deleter().pool->copy(*element.streamed);
  return copy;
}

ElementOrder::ElementOrder(const Source& source, const std::vector<OrderOp>& ops,
                           std::size_t max_member_bytes) {
  if (source.streamed()) {
    stages_.push_back(make_stream_stage(source.shard_set(), max_member_bytes));
  } else {
    stages_.push_back(std::make_unique<SourceStage>(source.size()));
  }
  for (const OrderOp& op : ops) {
    Stage& upstream = *stages_.back();
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, ShuffleOrder>) {
            stages_.push_back(
                std::make_unique<ShuffleStage>(upstream, o.buffer_size, o.seed, !source.streamed()));
          } else if constexpr (std::is_same_v<T, RepeatOrder>) {
            stages_.push_back(std::make_unique<RepeatStage>(upstream, o.count));
          } else if constexpr (std::is_same_v<T, ShardOrder>) {
            if (o.remainder == ShardRemainder::uneven) {
              stages_.push_back(std::make_unique<ShardStage>(upstream, o.num_shards, o.index));
            } else {
              stages_.push_back(
                  std::make_unique<EvenShardStage>(upstream, o.num_shards, o.index, o.remainder));
            }
          } else if constexpr (std::is_same_v<T, SkipOrder>) {
            stages_.push_back(std::make_unique<SkipStage>(upstream, o.count));
          } else {
            stages_.push_back(std::make_unique<TakeStage>(upstream, o.count));
          }
        },
        op);
  }
  stages_.back()->reset(0);
}

ElementOrder::~ElementOrder() {
  // Last stage first: the later stages hold elements whose streamed samples belong to the first's pool.
  while (!stages_.empty()) stages_.pop_back();
}

std::optional<OrderedElement> ElementOrder::next() { return stages_.back()->next(); }

void ElementOrder::cancel() { stages_.front()->cancel(); }

}  // namespace conveyor::detail
