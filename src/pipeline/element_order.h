// The serial part of the input stage: which source element comes next, in which epoch, under which index.
// Built from the ordering methods (shuffle, repeat, shard, skip, take) as a chain of pull-based stages,
// each restartable with an epoch number so that repeat re-runs (and re-shuffles) everything before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "src/pipeline/dataset_node.h"

namespace conveyor::detail {

struct OrderedElement {
  std::uint64_t source_index = 0;
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  // position in the epoch's order after the last shuffle; kept by shard/skip/take
  bool padding = false;     // a repeat that evens out the shards (ShardRemainder::pad)
};

class ElementOrder {
 public:
  ElementOrder(std::size_t source_size, const std::vector<OrderOp>& ops);
  ~ElementOrder();
  ElementOrder(const ElementOrder&) = delete;
  ElementOrder& operator=(const ElementOrder&) = delete;

  // The next element, or nullopt at the end of the stream.
  std::optional<OrderedElement> next();

  // One link of the chain: reset(epoch) restarts it (and everything before it) for that epoch.
  class Stage {
   public:
    virtual ~Stage() = default;
    virtual void reset(std::uint64_t epoch) = 0;
    virtual std::optional<OrderedElement> next() = 0;
  };

 private:
  std::vector<std::unique_ptr<Stage>> stages_;  // stages_[i] pulls from stages_[i - 1]
};

}  // namespace conveyor::detail
