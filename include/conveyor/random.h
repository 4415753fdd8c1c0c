// Per-sample randomness: every random decision is a pure function of a seed that the pipeline derives
// from (dataset seed, epoch, index), so a sample's result never depends on the thread that made it.
#pragma once

#include <cstdint>

namespace conveyor {

// SplitMix64 finaliser: a cheap, well-mixed 64-bit hash (Steele, Lea, Flood 2014).
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Combines two seeds into one; not symmetric, so (a, b) and (b, a) differ.
constexpr std::uint64_t combine_seeds(std::uint64_t a, std::uint64_t b) noexcept {
  return mix64(a ^ mix64(b + 0x632BE59BD9B4E019ull));
}

// The seed of one element of one epoch: the only source of randomness a sample's ops may use.
constexpr std::uint64_t sample_seed(std::uint64_t dataset_seed, std::uint64_t epoch,
                                    std::uint64_t index) noexcept {
  return combine_seeds(combine_seeds(dataset_seed, epoch), index);
}

// The Rng stream of a random op of kind `kind` (its constant, e.g. ops::stream::flip_horizontal) at
// `position` in its chain (0 for the first map or filter, 1 for the next, ...): a sample's draws for that
// op are Rng(sample.seed, op_stream(kind, position)). Two ops of one kind at different positions draw
// independently; the same op at the same position draws the same numbers on any thread, in any process.
// GPU-side augmentation that re-draws a sample's parameters after batching uses this same function.
constexpr std::uint64_t op_stream(std::uint64_t kind, std::uint64_t position) noexcept {
  return combine_seeds(kind, position);
}

// A small, fast generator (xoshiro256**) for the handful of draws one op makes on one sample.
// Construct it from the sample's seed and the op's stream (op_stream above) so that two ops on the same
// sample draw independent numbers.
class Rng {
 public:
  explicit constexpr Rng(std::uint64_t seed, std::uint64_t stream = 0) noexcept {
    std::uint64_t s = combine_seeds(seed, stream);
    for (auto& word : state_) word = s = mix64(s);
  }

  constexpr std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1), 53 bits.
  constexpr double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi).
  constexpr double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n); n > 0. (Lemire's multiply-shift; the bias is below 2^-32 for n < 2^32.)
  constexpr std::uint64_t below(std::uint64_t n) noexcept {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // True with probability p.
  constexpr bool bernoulli(double p) noexcept { return uniform() < p; }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t state_[4]{};
};

}  // namespace conveyor
