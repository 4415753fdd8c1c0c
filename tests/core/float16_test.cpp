// Host half and bfloat16 conversions: exact values, rounding to nearest even, subnormals, overflow.
#include "src/core/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace conveyor::nn {
namespace {

TEST(Half, ExactValuesRoundTrip) {
  for (float v : {0.f, 1.f, -2.f, 0.5f, 65504.f, 6.103515625e-05f /* smallest normal */,
                  5.9604645e-08f /* smallest subnormal */})
    EXPECT_EQ(half_to_float(float_to_half(v)), v) << v;
  EXPECT_EQ(float_to_half(1.f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.f), 0xC000);
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.f + 1.f / 2048), 0x3C00);   // halfway, even stays
  EXPECT_EQ(float_to_half(1.f + 3.f / 2048), 0x3C02);   // halfway, odd rounds up
  EXPECT_EQ(float_to_half(1.f + 1.5f / 2048), 0x3C01);  // above halfway
  EXPECT_EQ(float_to_half(2.98023224e-08f), 0x0000);    // half the smallest subnormal: to even (zero)
  EXPECT_EQ(float_to_half(3.0e-08f), 0x0001);
}

TEST(Half, OverflowsToInfinityAndKeepsNan) {
  EXPECT_EQ(float_to_half(65520.f), 0x7C00);
  EXPECT_EQ(float_to_half(65519.f), 0x7BFF);
  EXPECT_EQ(float_to_half(-1e9f), 0xFC00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Bfloat16, KeepsTheTopSixteenBitsRoundedToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(1.f + 1.f / 256), 0x3F80);  // halfway, even stays
  EXPECT_EQ(float_to_bfloat16(1.f + 3.f / 256), 0x3F82);  // halfway, odd rounds up
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(-3.5f)), -3.5f);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace conveyor::nn
