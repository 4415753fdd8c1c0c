#include "src/sources/shard_plan.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "conveyor/error.h"
#include "conveyor/random.h"

namespace conveyor::detail {
namespace {

// Segments of the shards in `order` that cover positions [begin, end) of the epoch's order.
void cover(const std::vector<std::optional<std::uint64_t>>& counts, const std::vector<std::size_t>& order,
           std::uint64_t begin, std::uint64_t end, bool padding, std::vector<Segment>& out) {
  std::uint64_t start = 0;  // position of the current shard's first sample
  for (const std::size_t shard : order) {
    const std::uint64_t count = *counts[shard];
    const std::uint64_t stop = start + count;
    if (stop > begin && start < end && count > 0) {
      Segment segment;
      segment.shard = shard;
      segment.first = std::max(begin, start) - start;
      segment.end = std::min(end, stop) - start;
      segment.index = start + segment.first;
      segment.padding = padding;
      segment.to_shard_end = *segment.end == count;
      out.push_back(segment);
    }
    start = stop;
    if (start >= end) break;
  }
}

}  // namespace

std::vector<std::size_t> shard_order(std::size_t count, bool shuffle, std::uint64_t seed,
                                     std::uint64_t epoch) {
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (!shuffle) return order;
  Rng rng(combine_seeds(seed, epoch), 0x5348'4152'4453ull);                              // stream "SHARDS"
  for (std::size_t i = count; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);  // Fisher-Yates
  return order;
}

std::vector<Segment> plan_epoch(const std::vector<std::optional<std::uint64_t>>& counts,
                                const std::vector<std::size_t>& order, int rank, int world_size,
                                ShardRemainder remainder) {
  std::vector<Segment> segments;
  const bool counted = std::all_of(counts.begin(), counts.end(), [](const auto& c) { return c.has_value(); });
  if (!counted) {
    if (world_size != 1)
      throw InvalidArgument("plan_epoch: splitting shards across ranks needs every shard's sample count");
    for (const std::size_t shard : order) {
      Segment segment;
      segment.shard = shard;
      segment.end = counts[shard];
      segment.to_shard_end = counts[shard].has_value();
      segments.push_back(segment);
    }
    return segments;
  }
  std::uint64_t n = 0;
  for (const std::size_t shard : order) n += *counts[shard];
  const auto w = static_cast<std::uint64_t>(world_size);
  const auto r = static_cast<std::uint64_t>(rank);
  const std::uint64_t q = n / w, m = n % w;
  std::uint64_t begin = 0, end = 0;
  if (remainder == ShardRemainder::drop) {
    begin = r * q;
    end = begin + q;
  } else {  // balanced: the first m ranks have one sample more
    begin = r * q + std::min(r, m);
    end = begin + q + (r < m ? 1 : 0);
  }
  cover(counts, order, begin, end, false, segments);
  // pad: the short ranks repeat the epoch's first samples, the k-th short rank sample k mod n.
  if (remainder == ShardRemainder::pad && m != 0 && r >= m) {
    const std::uint64_t repeat = (r - m) % n;
    cover(counts, order, repeat, repeat + 1, true, segments);
    segments.back().to_shard_end = false;  // a repeat checks nothing about the shard's end
  }
  return segments;
}

}  // namespace conveyor::detail
