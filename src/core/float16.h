// IEEE half and bfloat16 on the host, as raw 16-bit patterns, rounding to nearest even like the
// device's __float2half_rn / __float2bfloat16_rn, so host and GPU produce the same bits.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace conveyor::nn {

inline std::uint16_t float_to_bfloat16(float value) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

inline float bfloat16_to_float(std::uint16_t value) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value) << 16);
}

inline std::uint16_t float_to_half(float value) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t mag = bits & 0x7FFFFFFFu;
  if (mag >= 0x7F800000u) return sign | (mag > 0x7F800000u ? 0x7E00u : 0x7C00u);  // NaN, infinity
  if (mag >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and above round to infinity
  if (mag >= 0x38800000u) {                       // a normal half: rebias the exponent, round the mantissa
    std::uint32_t m = mag - 0x38000000u;
    m += 0x0FFFu + ((m >> 13) & 1u);
    return sign | static_cast<std::uint16_t>(m >> 13);
  }
  if (mag <= 0x33000000u) return sign;  // at most half the smallest subnormal: ties to even, zero
  const std::uint32_t exponent = mag >> 23;
  const std::uint32_t mantissa = (mag & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126u - exponent;  // subnormal unit is 2^-24
  std::uint32_t q = mantissa >> shift;
  const std::uint32_t rest = mantissa & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (q & 1u))) ++q;
  return sign | static_cast<std::uint16_t>(q);
}

inline float half_to_float(std::uint16_t value) noexcept {
  const std::uint32_t sign = (static_cast<std::uint32_t>(value) & 0x8000u) << 16;
  const std::uint32_t exponent = (value >> 10) & 0x1Fu, mantissa = value & 0x3FFu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace conveyor::nn
