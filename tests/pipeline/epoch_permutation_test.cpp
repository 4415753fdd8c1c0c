// The whole-epoch shuffle's permutation: a bijection of [0, n) for every n, a different one per key, and
// no visible structure (few fixed points, few runs of consecutive elements).
#include "src/pipeline/epoch_permutation.h"

#include <gtest/gtest.h>

#include <vector>

namespace conveyor::detail {
namespace {

TEST(EpochPermutation, IsABijectionOfItsRangeForEverySize) {
  for (const std::uint64_t n :
       {0ull, 1ull, 2ull, 3ull, 5ull, 16ull, 17ull, 100ull, 1000ull, 4097ull, 65537ull}) {
    const EpochPermutation permutation(n, 42);
    std::vector<bool> seen(n, false);
    for (std::uint64_t p = 0; p < n; ++p) {
      const std::uint64_t element = permutation(p);
      ASSERT_LT(element, n) << "size " << n << ", position " << p;
      ASSERT_FALSE(seen[element]) << "size " << n << ": " << element << " twice";
      seen[element] = true;
    }
  }
}

TEST(EpochPermutation, LooksRandomAndDependsOnTheKey) {
  constexpr std::uint64_t n = 10'000;
  const EpochPermutation a(n, 1), b(n, 2);
  int fixed = 0, consecutive = 0, same_as_other_key = 0;
  for (std::uint64_t p = 0; p < n; ++p) {
    fixed += a(p) == p;
    if (p + 1 < n) consecutive += a(p + 1) == a(p) + 1;
    same_as_other_key += a(p) == b(p);
  }
  // A uniformly random permutation has about 1 fixed point, 1 consecutive pair and 1 agreement.
  EXPECT_LT(fixed, 10);
  EXPECT_LT(consecutive, 10);
  EXPECT_LT(same_as_other_key, 10);
  // Positions near each other go far apart: the mean distance is about n / 3 for a random permutation.
  double distance = 0;
  for (std::uint64_t p = 0; p + 1 < n; ++p)
    distance += static_cast<double>(a(p) > a(p + 1) ? a(p) - a(p + 1) : a(p + 1) - a(p));
  EXPECT_NEAR(distance / (n - 1), n / 3.0, n / 20.0);
}

}  // namespace
}  // namespace conveyor::detail
