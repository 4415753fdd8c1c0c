#include "src/pipeline/element_order.h"

#include "conveyor/random.h"

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
    return OrderedElement{i, epoch_, i};
  }

 private:
  const std::uint64_t size_;
  std::uint64_t epoch_ = 0, position_ = 0;
};

// tf.data's buffered shuffle: hold `buffer_size` elements, emit a uniformly chosen one and put the next
// upstream element in its place. Seeded from (seed, epoch), so every epoch has its own order. The emitted
// element's index becomes its position in this stage's output.
class ShuffleStage final : public Stage {
 public:
  ShuffleStage(Stage& upstream, std::size_t buffer_size, std::uint64_t seed)
      : upstream_(upstream), buffer_size_(buffer_size), seed_(seed), rng_(seed) {}
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

 private:
  Stage& upstream_;
  const std::size_t buffer_size_;
  const std::uint64_t seed_;
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

ElementOrder::ElementOrder(std::size_t source_size, const std::vector<OrderOp>& ops) {
  stages_.push_back(std::make_unique<SourceStage>(source_size));
  for (const OrderOp& op : ops) {
    Stage& upstream = *stages_.back();
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, ShuffleOrder>) {
            stages_.push_back(std::make_unique<ShuffleStage>(upstream, o.buffer_size, o.seed));
          } else if constexpr (std::is_same_v<T, RepeatOrder>) {
            stages_.push_back(std::make_unique<RepeatStage>(upstream, o.count));
          } else if constexpr (std::is_same_v<T, ShardOrder>) {
            stages_.push_back(std::make_unique<ShardStage>(upstream, o.num_shards, o.index));
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

ElementOrder::~ElementOrder() = default;

std::optional<OrderedElement> ElementOrder::next() { return stages_.back()->next(); }

}  // namespace conveyor::detail
