// What an IteratorState holds, and how a new iterator's element order is put where a state says.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/pipeline/element_order.h"

namespace conveyor::detail {

struct IteratorStateData {
  std::uint64_t seed = 0;            // the pipeline's seed: per-sample seeds depend on it
  std::vector<std::string> order;    // ElementOrder::describe of the chain, with resolved shuffle seeds
  std::vector<std::uint64_t> words;  // ElementOrder::save after the last element delivered
  std::uint64_t batches = 0, elements = 0, epoch = 0;
  bool sharded = false;  // the chain has one shard(); then:
  std::uint64_t shard_index = 0, shard_count = 1;
  ShardFrontier frontier;                  // the last element this shard delivered
  std::vector<ConsumedElements> consumed;  // from elastic restores, still ahead of the frontier
  bool combined = false;                   // made by IteratorState::combine: words of the slowest shard
};

// Puts `order` (of a chain described by `description`, with pipeline seed `seed`) at `state`, and returns
// the consumed sets the new iterator carries on. Throws InvalidArgument naming the first mismatch.
std::vector<ConsumedElements> restore_order(const IteratorStateData& state,
                                            const std::vector<std::string>& description, std::uint64_t seed,
                                            ElementOrder& order);

}  // namespace conveyor::detail
