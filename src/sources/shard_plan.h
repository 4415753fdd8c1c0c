// Which samples of which shards one rank reads in one epoch.
//
// The epoch's order is the shards in this epoch's order (shuffled per epoch when asked), each shard's
// samples in the order they are stored. A sample's index is its position in that order: the same sample
// has the same index (and so the same seed and pixels) whatever the world size and thread count. The ranks
// split the order into contiguous ranges of balanced length (ShardRemainder decides what happens to the
// n mod world_size samples left over), so each rank reads whole shards, except at most one shard at each
// end of its range, which it shares with its neighbour (reading only its part; a file seeks over the
// rest, a URL streams it). Together the ranges cover every sample of the epoch exactly once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "conveyor/shards.h"

namespace conveyor::detail {

// Samples [first, end) of one shard; the first of them has index `index` in the epoch's order.
struct Segment {
  std::size_t shard = 0;  // position in the ShardSet's list
  std::uint64_t first = 0;
  std::optional<std::uint64_t> end;    // nullopt: to the shard's end (its count is unknown)
  std::optional<std::uint64_t> index;  // nullopt: right after the previous segment's last sample
  bool padding = false;                // a repeat that evens the ranks out (ShardRemainder::pad)
  bool to_shard_end = false;           // `end` is the shard's count: check that the shard ends there
};

// The order of `count` shards in `epoch`: a permutation drawn from (seed, epoch), or 0, 1, 2, ...
std::vector<std::size_t> shard_order(std::size_t count, bool shuffle, std::uint64_t seed,
                                     std::uint64_t epoch);

// What `rank` of `world_size` reads in an epoch whose shards come in `order`, given each shard's count
// (every count must be known when world_size > 1; with one rank an unknown count reads the shard whole).
std::vector<Segment> plan_epoch(const std::vector<std::optional<std::uint64_t>>& counts,
                                const std::vector<std::size_t>& order, int rank, int world_size,
                                ShardRemainder remainder);

}  // namespace conveyor::detail
