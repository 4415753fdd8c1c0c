#include "src/pipeline/epoch_permutation.h"

#include "conveyor/random.h"

namespace conveyor::detail {
namespace {

constexpr int kRounds = 6;

}  // namespace

EpochPermutation::EpochPermutation(std::uint64_t size, std::uint64_t key) noexcept : size_(size), key_(key) {
  // The smallest 2h bits (h >= 1) whose domain 4^h holds every position.
  half_bits_ = 1;
  while (half_bits_ < 32 && (std::uint64_t{1} << (2 * half_bits_)) < size) ++half_bits_;
  half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
}

std::uint64_t EpochPermutation::network(std::uint64_t value) const noexcept {
  std::uint64_t left = value >> half_bits_, right = value & half_mask_;
  for (int round = 0; round < kRounds; ++round) {
    const std::uint64_t f = combine_seeds(key_ + static_cast<std::uint64_t>(round), right) & half_mask_;
    const std::uint64_t next_right = left ^ f;
    left = right;
    right = next_right;
  }
  return (left << half_bits_) | right;
}

std::uint64_t EpochPermutation::operator()(std::uint64_t position) const noexcept {
  if (size_ <= 1) return position;
  std::uint64_t value = network(position);
  // The network permutes [0, 4^h); following the cycle of `position` until it re-enters [0, size) gives a
  // permutation of [0, size) (each value's successor inside the range is unique, and the walk ends because
  // the cycle through `position` contains `position` itself).
  while (value >= size_) value = network(value);
  return value;
}

}  // namespace conveyor::detail
