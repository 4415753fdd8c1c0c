#include "conveyor/random.h"

#include <gtest/gtest.h>

#include <set>

#include "conveyor/sample.h"

namespace conveyor {
namespace {

TEST(Rng, SameSeedSameSequence) {
  Rng a(42, 7), b(42, 7);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
}

TEST(Rng, StreamsOfOneSeedDiffer) {
  Rng a(42, 1), b(42, 2);
  EXPECT_NE(a.next(), b.next());
}

TEST(Rng, UniformStaysInRangeAndCoversIt) {
  Rng rng(1);
  double lo = 1, hi = 0;
  for (int i = 0; i < 10000; ++i) {
    const double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  EXPECT_LT(lo, 0.01);
  EXPECT_GT(hi, 0.99);
}

TEST(Rng, BelowHitsEveryValue) {
  Rng rng(3);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto v = rng.below(10);
    ASSERT_LT(v, 10u);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 10u);
}

TEST(SampleSeed, DependsOnEpochAndIndex) {
  EXPECT_NE(sample_seed(1, 0, 5), sample_seed(1, 1, 5));
  EXPECT_NE(sample_seed(1, 0, 5), sample_seed(1, 0, 6));
  EXPECT_EQ(sample_seed(1, 2, 5), sample_seed(1, 2, 5));
}

TEST(OpStream, DependsOnTheKindAndThePositionInTheChain) {
  static_assert(op_stream(7, 1) == op_stream(7, 1), "a pure function, usable at compile time");
  EXPECT_NE(op_stream(7, 0), op_stream(7, 1));
  EXPECT_NE(op_stream(7, 0), op_stream(8, 0));
  EXPECT_NE(op_stream(7, 1), op_stream(1, 7));
  // Two ops of one kind at two positions draw independent numbers from one sample's seed.
  Rng first(sample_seed(1, 0, 3), op_stream(7, 0)), second(sample_seed(1, 0, 3), op_stream(7, 1));
  int same = 0;
  for (int i = 0; i < 64; ++i) same += first.below(2) == second.below(2);
  EXPECT_GT(same, 16);
  EXPECT_LT(same, 48);
}

TEST(SampleRng, DrawsFromTheSeedAndTheOpsPosition) {
  Sample sample;
  sample.seed = 99;
  sample.op_position = 2;
  Rng expected(99, op_stream(5, 2)), got = sample.rng(5);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got.next(), expected.next());
}

}  // namespace
}  // namespace conveyor
