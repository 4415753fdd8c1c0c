// The trainer's account of its splits: which it has been handed, where each is being made, how many of its
// batches arrived intact and how many went to the consumer. Exactly-once rests here: a split's batches arrive
// in order from one maker at a time, so "received" is a count; a split whose maker is lost is handed out
// again from its first batch not received (Dataset::epoch_range makes exactly that remainder, bit for bit),
// and a batch arriving out of order is refused rather than delivered twice. No threads: the stream calls it
// under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "conveyor/batch_source.h"
#include "src/service/common/split_plan.h"

namespace conveyor::service::detail {

class SplitLedger {
 public:
  // Who makes a split; opaque to the ledger.
  using Maker = const void*;

  // At `start`: the words of an earlier position() (empty: the job's beginning).
  SplitLedger(SplitPlan plan, const BatchStreamPosition& start);

  // The next split index not handed to this consumer yet, and whether there is one.
  std::uint64_t cursor() const noexcept { return cursor_; }
  bool exhausted() const noexcept;
  // Takes split `index` (== cursor(), normally from the dispatcher) into hand.
  void take(std::uint64_t index);

  // A split in hand that nobody makes (new, or its maker was lost): its index and first batch to make.
  struct Work {
    std::uint64_t split, first_batch;
  };
  std::optional<Work> unassigned() const;
  void assign(std::uint64_t split, Maker maker);
  std::size_t assigned_to(Maker maker) const;
  // The splits `maker` had: handed out again from their first batch not received.
  std::vector<std::uint64_t> lose(Maker maker);

  // Batch `batch_in_split` of `split` arrived from `maker`: true when it is the next one expected from it
  // (then counted as received), false for anything else (a stale maker, a duplicate, a gap).
  bool receive(std::uint64_t split, std::uint64_t batch_in_split, Maker maker);
  // The split's end arrived from `maker` after `batches`: false when it does not add up.
  bool end(std::uint64_t split, std::uint64_t batches, Maker maker);
  // Forgets received batches from `batch_in_split` on (they were damaged): they are made again.
  void rewind(std::uint64_t split, std::uint64_t batch_in_split);
  // A batch of `split` with `elements` samples went to the consumer.
  void deliver(std::uint64_t split, std::uint64_t elements);

  // A split in hand: its batches (as far as known), received and delivered.
  struct Progress {
    std::uint64_t batches, received, delivered;
    bool ended;
  };
  std::optional<Progress> progress(std::uint64_t split) const;
  // The splits in hand, lowest first.
  std::vector<std::uint64_t> splits() const;
  // The lowest split in hand (the next in a deterministic order), its next batch to deliver.
  std::optional<Work> head() const;
  bool in_hand(std::uint64_t split) const { return splits_.contains(split); }
  std::size_t splits_in_hand() const noexcept { return splits_.size(); }
  // Every split handed out and delivered whole.
  bool finished() const noexcept { return exhausted() && splits_.empty(); }
  // Where the consumer stands: cursor, then (split, batches delivered) for each split in hand.
  BatchStreamPosition position() const;
  const SplitPlan& plan() const noexcept { return plan_; }

 private:
  struct InHand {
    std::uint64_t batches = 0;  // in the whole split
    std::uint64_t received = 0, delivered = 0;
    Maker maker = nullptr;
    bool ended = false;
  };
  const SplitPlan plan_;
  std::uint64_t cursor_ = 0;
  std::map<std::uint64_t, InHand> splits_;
  std::uint64_t batches_ = 0, elements_ = 0, epoch_ = 0;
};

}  // namespace conveyor::service::detail
