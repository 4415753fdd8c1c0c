// What a data set's remote reads have done (RemoteReadStats), counted by every stream of every iterator of
// the data set at once: atomics, read into a snapshot by Iterator::stats().
#pragma once

#include <atomic>
#include <cstdint>

#include "conveyor/stats.h"

namespace conveyor::detail {

struct RemoteCounters {
  std::atomic<std::uint64_t> shards_opened{0}, cache_hits{0}, cache_misses{0}, uncached{0}, bytes_fetched{0},
      bytes_from_cache{0}, evictions{0}, retries{0};

  static void add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) noexcept {
    counter.fetch_add(n, std::memory_order_relaxed);
  }
  RemoteReadStats snapshot() const noexcept {
    const auto get = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    return {get(shards_opened), get(cache_hits),       get(cache_misses), get(uncached),
            get(bytes_fetched), get(bytes_from_cache), get(evictions),    get(retries)};
  }
};

}  // namespace conveyor::detail
