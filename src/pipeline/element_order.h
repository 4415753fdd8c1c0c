// The serial part of the input stage: which source element comes next, in which epoch, under which index.
// Built from the ordering methods (shuffle, repeat, shard, skip, take) as a chain of pull-based stages,
// each restartable with an epoch number so that repeat re-runs (and re-shuffles) everything before it.
// The first link counts 0..n-1 for a random-access source; for a streamed one (tar shards) it is the
// stream stage (stream_stage.h), whose elements arrive with their bytes.
//
// State: after every next() the chain's position is a few words per stage (save()), and a new chain of the
// same ops continues from them (restore()): in O(1) for every stage but the buffered shuffle, which replays
// its draws since its last reset (index arithmetic only, no element is read or decoded). The whole-epoch
// shuffle is a keyed permutation with random access (epoch_permutation.h), so its position is one number.
//
// Elastic restore: the state of every shard of an earlier run (their ShardFrontiers) tells which elements
// of the current epoch are already consumed; a chain with another shard count restores the stages before
// its shard stage from the shard that was furthest behind and skips the consumed elements (exclude()).
//
// A streamed source has no random access (no whole-epoch shuffle over it: shuffle(buffer_size) there);
// its state is (epoch, samples emitted), and a restore reads the epoch's shards again from their start
// and throws away what was already emitted. The even shard stage (shard with ShardRemainder pad or drop)
// holds elements back, so it too replays its upstream since its last reset (see the .cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/pipeline/dataset_node.h"
#include "src/sources/streamed_sample.h"

namespace conveyor::detail {

struct ShardSet;

struct OrderedElement {
  std::uint64_t source_index = 0;
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  // position in the epoch's order after the last shuffle; kept by shard/skip/take
  bool padding = false;     // a repeat that evens out the shards (ShardRemainder::pad)
  StreamedSamplePtr streamed;  // a streamed source's sample (bytes, label, path), read ahead; else null
};

// A copy of `element`, its streamed sample included (for the few repeats that even out the ranks).
OrderedElement copy_of(const OrderedElement& element);

// The last element a shard stage let through: every element of its shard up to (epoch, index) is consumed.
struct ShardFrontier {
  bool any = false;  // false: it let nothing through (yet)
  std::uint64_t epoch = 0, index = 0;

  friend bool operator==(const ShardFrontier&, const ShardFrontier&) = default;
  // Ordered by (epoch, index); "nothing" comes first.
  bool before(const ShardFrontier& other) const noexcept;
};

// The elements all shards of one earlier run consumed: element (epoch, index) belongs to shard
// index % frontiers.size() and is consumed when it is not after that shard's frontier.
struct ConsumedElements {
  std::vector<ShardFrontier> frontiers;

  bool contains(std::uint64_t epoch, std::uint64_t index) const noexcept;
  // False once (epoch, index) is past every frontier: no later element can be in the set.
  bool matters_after(const ShardFrontier& position) const noexcept;
  friend bool operator==(const ConsumedElements&, const ConsumedElements&) = default;
};

class ElementOrder {
 public:
  // max_member_bytes: a streamed source refuses image members over this (0: no limit). Throws
  // InvalidArgument when the chain cannot be built (a whole-epoch shuffle after a stage without random
  // access: a streamed source, a buffered shuffle, a repeat forever, a shard of a shard). Reads nothing:
  // a streamed source starts reading at the first next(). in_order = false lets a streamed source hand out
  // the shards it reads at once as their samples arrive (ShardStreamer's as-ready interleave), for
  // pipelines that deliver out of order anyway.
  ElementOrder(const Source& source, const std::vector<OrderOp>& ops, std::size_t max_member_bytes = 0,
               bool in_order = true);
  // A random-access source of `source_size` elements (what the order of files or memory depends on).
  ElementOrder(std::size_t source_size, const std::vector<OrderOp>& ops);
  ~ElementOrder();
  ElementOrder(const ElementOrder&) = delete;
  ElementOrder& operator=(const ElementOrder&) = delete;

  // The next element, or nullopt at the end of the stream (or once cancelled).
  std::optional<OrderedElement> next();
  // Stops a streamed source's reading and waits (next() then returns nullopt). Callable from any thread.
  void cancel();

  // ---- state ----
  // Words of the state after the last next(); the same for every chain of the same ops.
  std::size_t state_words() const noexcept { return state_words_; }
  // Writes them (state_words() of them): no allocation, cheap enough for every element.
  void save(std::span<std::uint64_t> words) const noexcept;
  // Continues after the element whose state `words` are (saved by a chain of the same ops). Throws
  // InvalidArgument when a word is out of range for these ops.
  void restore(std::span<const std::uint64_t> words);
  // From now on the shard stage skips these elements (an elastic restore; InvalidArgument unless
  // elastic_problem() is empty). Unless keep_frontier, the shard's own frontier starts empty: the restored
  // words were another shard's.
  void exclude(std::vector<ConsumedElements> consumed, bool keep_frontier = false);
  // The shard stage's frontier in saved words; nullopt without a shard stage.
  std::optional<ShardFrontier> shard_frontier(std::span<const std::uint64_t> words) const;
  // Why a state of this chain cannot be restored onto another shard count (nullopt: it can).
  std::optional<std::string> elastic_problem() const;

  // One line per op, source first ("files 1000", "shuffle whole epoch seed 0x..", "shard 1 of 4", ...): what
  // a state records to recognise the chain it belongs to.
  // A streamed source is "tar shards N samples M rank r of w ..." (its split across ranks included).
  static std::vector<std::string> describe(const Source& source, const std::vector<OrderOp>& ops);

  // One link of the chain: reset(epoch) restarts it (and everything before it) for that epoch.
  // Pull-based, with an O(1) state (save/restore of its own words only: each stage restores itself) and,
  // where the stage allows it, random access to its epoch (length(), at()) for a whole-epoch shuffle after
  // it. (Defined here rather than in the .cpp because the stream stage lives in a file of its own.)
  class Stage {
   public:
    virtual ~Stage() = default;
    virtual void reset(std::uint64_t epoch) = 0;
    virtual std::optional<OrderedElement> next() = 0;
    // Stops a streamed source's reading (next() then returns nullopt). Callable from any thread.
    virtual void cancel() {}

    // Random access: the same elements next() gives after reset(epoch), by position.
    virtual bool random_access() const noexcept { return false; }
    virtual std::uint64_t length() const noexcept { return 0; }
    virtual OrderedElement at(std::uint64_t /*epoch*/, std::uint64_t /*position*/) const noexcept {
      return {};
    }
    // When set, at(e, p).index == p + *index_offset() (what a shard needs to find its elements by position).
    virtual std::optional<std::uint64_t> index_offset() const noexcept { return std::nullopt; }

    virtual std::size_t words() const noexcept = 0;
    virtual void save(std::uint64_t* out) const noexcept = 0;
    virtual void restore(const std::uint64_t* in) = 0;
  };

 private:
  // Chains the ops after `first`; `streamed`: the shards when the source is a stream, else null.
  void build(std::unique_ptr<Stage> first, const ShardSet* streamed, const std::vector<OrderOp>& ops);

  std::vector<std::unique_ptr<Stage>> stages_;  // stages_[i] pulls from stages_[i - 1]
  std::size_t state_words_ = 0;
  std::optional<std::size_t> shard_stage_;
  std::size_t shard_offset_ = 0;  // where the shard stage's words start
  std::optional<std::string> elastic_problem_;
};

}  // namespace conveyor::detail
