// The serial part of the input stage: which source element comes next, in which epoch, under which index.
// Built from the ordering methods (shuffle, repeat, shard, skip, take) as a chain of pull-based stages,
// each restartable with an epoch number so that repeat re-runs (and re-shuffles) everything before it.
//
// State: after every next() the chain's position is a few words per stage (save()), and a new chain of the
// same ops continues from them (restore()): in O(1) for every stage but the buffered shuffle, which replays
// its draws since its last reset (index arithmetic only, no element is read or decoded). The whole-epoch
// shuffle is a keyed permutation with random access (epoch_permutation.h), so its position is one number.
//
// Elastic restore: the state of every shard of an earlier run (their ShardFrontiers) tells which elements
// of the current epoch are already consumed; a chain with another shard count restores the stages before
// its shard stage from the shard that was furthest behind and skips the consumed elements (exclude()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/pipeline/dataset_node.h"

namespace conveyor::detail {

struct OrderedElement {
  std::uint64_t source_index = 0;
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  // position in the epoch's order after the last shuffle; kept by shard/skip/take
};

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
  // Throws InvalidArgument when the chain cannot be built (a whole-epoch shuffle after a stage without
  // random access: a buffered shuffle, a repeat forever, a shard of a shard).
  ElementOrder(std::size_t source_size, const std::vector<OrderOp>& ops);
  ~ElementOrder();
  ElementOrder(const ElementOrder&) = delete;
  ElementOrder& operator=(const ElementOrder&) = delete;

  // The next element, or nullopt at the end of the stream.
  std::optional<OrderedElement> next();

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
  static std::vector<std::string> describe(std::size_t source_size, const std::vector<OrderOp>& ops);

  // One link of the chain: reset(epoch) restarts it (and everything before it) for that epoch.
  class Stage;

 private:
  std::vector<std::unique_ptr<Stage>> stages_;  // stages_[i] pulls from stages_[i - 1]
  std::size_t state_words_ = 0;
  std::optional<std::size_t> shard_stage_;
  std::size_t shard_offset_ = 0;  // where the shard stage's words start
  std::optional<std::string> elastic_problem_;
};

}  // namespace conveyor::detail
