// A keyed bijection of [0, n): the whole-epoch shuffle's order, computed one position at a time.
//
// Why not a shuffled array or tf.data's buffer: an iterator's state must stay a few numbers and restore in
// O(1) at any position. A Fisher-Yates array is O(n) memory and O(n) to rebuild; a buffered shuffle's state
// is its buffer (or a replay of every draw since the epoch began). A pseudo-random permutation that maps a
// position straight to an element has neither cost: position p of the epoch is element perm(p), whatever
// came before. Google's Grain shuffles the same way for the same reason.
//
// Construction: a balanced Feistel network over the smallest domain of 2h bits that holds n (so fewer than
// 4n values), whose round function is the SplitMix64 mix of (key, round, half); values that land outside
// [0, n) are walked through the network again until they land inside ("cycle walking"), which keeps the
// map a bijection of [0, n) and costs fewer than 4 rounds-of-network on average. Six rounds: a Feistel
// network needs at least four to look random to a distinguisher (Luby-Rackoff); training needs no more.
#pragma once

#include <cstdint>

namespace conveyor::detail {

class EpochPermutation {
 public:
  EpochPermutation(std::uint64_t size, std::uint64_t key) noexcept;

  std::uint64_t size() const noexcept { return size_; }
  // The element at `position` (< size()).
  std::uint64_t operator()(std::uint64_t position) const noexcept;

 private:
  std::uint64_t network(std::uint64_t value) const noexcept;

  std::uint64_t size_;
  std::uint64_t key_;
  int half_bits_ = 0;
  std::uint64_t half_mask_ = 0;
};

}  // namespace conveyor::detail
