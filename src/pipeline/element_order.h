// The serial part of the input stage: which source element comes next, in which epoch, under which index.
// Built from the ordering methods (shuffle, repeat, shard, skip, take) as a chain of pull-based stages,
// each restartable with an epoch number so that repeat re-runs (and re-shuffles) everything before it.
// The first link counts 0..n-1 for a random-access source; for a streamed one (tar shards) it is the
// stream stage (stream_stage.h), whose elements arrive with their bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "src/pipeline/dataset_node.h"
#include "src/sources/streamed_sample.h"

namespace conveyor::detail {

struct OrderedElement {
  std::uint64_t source_index = 0;
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  // position in the epoch's order after the last shuffle; kept by shard/skip/take
  bool padding = false;     // a repeat that evens out the shards (ShardRemainder::pad)
  StreamedSamplePtr streamed;  // a streamed source's sample (bytes, label, path), read ahead; else null
};

// A copy of `element`, its streamed sample included (for the few repeats that even out the ranks).
OrderedElement copy_of(const OrderedElement& element);

class ElementOrder {
 public:
  // max_member_bytes: a streamed source refuses image members over this (0: no limit).
  ElementOrder(const Source& source, const std::vector<OrderOp>& ops, std::size_t max_member_bytes = 0);
  ~ElementOrder();
  ElementOrder(const ElementOrder&) = delete;
  ElementOrder& operator=(const ElementOrder&) = delete;

  // The next element, or nullopt at the end of the stream (or once cancelled).
  std::optional<OrderedElement> next();
  // Stops a streamed source's reading and waits (next() then returns nullopt). Callable from any thread.
  void cancel();

  // One link of the chain: reset(epoch) restarts it (and everything before it) for that epoch.
  class Stage {
   public:
    virtual ~Stage() = default;
    virtual void reset(std::uint64_t epoch) = 0;
    virtual std::optional<OrderedElement> next() = 0;
    virtual void cancel() {}
  };

 private:
  std::vector<std::unique_ptr<Stage>> stages_;  // stages_[i] pulls from stages_[i - 1]
};

}  // namespace conveyor::detail
