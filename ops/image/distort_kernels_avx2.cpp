// The colour-jitter row kernel for AVX2: 8 RGB pixels per step, deinterleaved with byte shuffles, adjusted
// in float registers, interleaved back. Every operation matches the portable kernel's (same order, no
// fused multiply-add, truncation through int), so both give the same bytes.
#include "ops/image/distort_kernels.h"

#ifdef CONVEYOR_AVX2_COLOR_KERNEL
#include <immintrin.h>

namespace conveyor::ops::detail {
namespace {

#define CONVEYOR_AVX2 __attribute__((target("avx2")))

CONVEYOR_AVX2 inline __m256 to_8bit(__m256 x) {
  const __m256 t = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(x));
  return _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
}

CONVEYOR_AVX2 inline __m256 scale_and_shift(__m256 x, __m256 factor, __m256 shift) {
  return to_8bit(_mm256_add_ps(_mm256_mul_ps(x, factor), shift));
}

// a * x + b * y + c * z, evaluated left to right like the portable kernel.
CONVEYOR_AVX2 inline __m256 dot(__m256 a, __m256 x, __m256 b, __m256 y, __m256 c, __m256 z) {
  return _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(a, x), _mm256_mul_ps(b, y)), _mm256_mul_ps(c, z));
}

}  // namespace

CONVEYOR_AVX2 int apply_rgb_row_avx2(std::uint8_t* row, int width, const ColorPass& pass, ChannelSums* sums) {
  // 24 bytes r0 g0 b0 ... r7 g7 b7 arrive as x0 (bytes 0..15) and x1 (bytes 16..23).
  const __m128i rg_from_x0 = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1);
  const __m128i rg_from_x1 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, -1, -1, -1, -1, -1, 0, 3, 6);
  const __m128i b_from_x0 = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b_from_x1 = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, -1, -1, -1, -1, -1, -1, -1, -1);
  // And back: from rg (r0..r7 g0..g7) and b (b0..b7) to the 16 + 8 interleaved bytes.
  const __m128i out0_from_rg = _mm_setr_epi8(0, 8, -1, 1, 9, -1, 2, 10, -1, 3, 11, -1, 4, 12, -1, 5);
  const __m128i out0_from_b = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
  const __m128i out1_from_rg = _mm_setr_epi8(13, -1, 6, 14, -1, 7, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i out1_from_b = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1);
  __m256 factor[4], shift[4], hue[9];
  for (int s = 0; s < pass.count; ++s) {
    factor[s] = _mm256_set1_ps(pass.steps[s].factor);
    shift[s] = _mm256_set1_ps(pass.steps[s].shift);
  }
  for (int i = 0; i < 9; ++i) hue[i] = _mm256_set1_ps(pass.hue[i]);
  const __m256 gray_r = _mm256_set1_ps(0.2989f), gray_g = _mm256_set1_ps(0.587f),
               gray_b = _mm256_set1_ps(0.114f);
  const __m256 half = _mm256_set1_ps(0.5f);
  __m256i sum_r = _mm256_setzero_si256(), sum_g = sum_r, sum_b = sum_r;

  int x = 0;
  for (; x + 8 <= width; x += 8) {
    std::uint8_t* p = row + static_cast<std::ptrdiff_t>(x) * 3;
    const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i x1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16));
    const __m128i rg = _mm_or_si128(_mm_shuffle_epi8(x0, rg_from_x0), _mm_shuffle_epi8(x1, rg_from_x1));
    const __m128i bb = _mm_or_si128(_mm_shuffle_epi8(x0, b_from_x0), _mm_shuffle_epi8(x1, b_from_x1));
    __m256 r = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(rg));
    __m256 g = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(rg, 8)));
    __m256 b = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bb));
    for (int s = 0; s < pass.count; ++s) {
      switch (pass.steps[s].what) {
        case ColorAdjustment::brightness:
        case ColorAdjustment::contrast:
          r = scale_and_shift(r, factor[s], shift[s]);
          g = scale_and_shift(g, factor[s], shift[s]);
          b = scale_and_shift(b, factor[s], shift[s]);
          break;
        case ColorAdjustment::saturation: {
          const __m256 keep = _mm256_sub_ps(_mm256_set1_ps(1.0f), factor[s]);
          const __m256 gray = _mm256_mul_ps(
              _mm256_cvtepi32_ps(_mm256_cvttps_epi32(dot(gray_r, r, gray_g, g, gray_b, b))), keep);
          r = scale_and_shift(r, factor[s], gray);
          g = scale_and_shift(g, factor[s], gray);
          b = scale_and_shift(b, factor[s], gray);
          break;
        }
        case ColorAdjustment::hue: {
          const __m256 r2 = to_8bit(_mm256_add_ps(dot(hue[0], r, hue[1], g, hue[2], b), half));
          const __m256 g2 = to_8bit(_mm256_add_ps(dot(hue[3], r, hue[4], g, hue[5], b), half));
          const __m256 b2 = to_8bit(_mm256_add_ps(dot(hue[6], r, hue[7], g, hue[8], b), half));
          r = r2;
          g = g2;
          b = b2;
          break;
        }
      }
    }
    const __m256i ri = _mm256_cvttps_epi32(r), gi = _mm256_cvttps_epi32(g), bi = _mm256_cvttps_epi32(b);
    if (sums != nullptr) {
      sum_r = _mm256_add_epi32(sum_r, ri);
      sum_g = _mm256_add_epi32(sum_g, gi);
      sum_b = _mm256_add_epi32(sum_b, bi);
    }
    if (pass.count == 0) continue;  // a pass that only sums leaves the pixels alone
    // 32-bit to 16-bit packs within 128-bit lanes: [r0..3 g0..3 | r4..7 g4..7]; reorder to [r | g].
    const __m256i rg16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(ri, gi), 0xD8);
    const __m256i bb16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(bi, bi), 0xD8);
    const __m128i rg8 = _mm_packus_epi16(_mm256_castsi256_si128(rg16), _mm256_extracti128_si256(rg16, 1));
    const __m128i b8 = _mm_packus_epi16(_mm256_castsi256_si128(bb16), _mm256_castsi256_si128(bb16));
    const __m128i out0 = _mm_or_si128(_mm_shuffle_epi8(rg8, out0_from_rg), _mm_shuffle_epi8(b8, out0_from_b));
    const __m128i out1 = _mm_or_si128(_mm_shuffle_epi8(rg8, out1_from_rg), _mm_shuffle_epi8(b8, out1_from_b));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), out0);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 16), out1);
  }
  if (sums != nullptr) {
    alignas(32) std::int32_t lanes[3][8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[0]), sum_r);
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[1]), sum_g);
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[2]), sum_b);
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 8; ++i) sums->sum[c] += lanes[c][i];
  }
  return x;
}

CONVEYOR_AVX2 int apply_flat_row_avx2(std::uint8_t* row, int values, const ColorPass& pass,
                                      ChannelSums* sums) {
  __m256 factor[4], shift[4];
  for (int s = 0; s < pass.count; ++s) {
    factor[s] = _mm256_set1_ps(pass.steps[s].factor);
    shift[s] = _mm256_set1_ps(pass.steps[s].shift);
  }
  // Blocks of 24 values (8 RGB pixels): the channel of lane j of vector k is (8k + j) % 3 in every block.
  __m256i sum[3] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  int i = 0;
  for (; i + 24 <= values; i += 24) {
    std::uint8_t* p = row + i;
    __m256 v[3];
    for (std::ptrdiff_t k = 0; k < 3; ++k)
      v[k] = _mm256_cvtepi32_ps(
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * k))));
    for (int s = 0; s < pass.count; ++s)
      for (int k = 0; k < 3; ++k) v[k] = scale_and_shift(v[k], factor[s], shift[s]);
    __m256i n[3];
    for (int k = 0; k < 3; ++k) {
      n[k] = _mm256_cvttps_epi32(v[k]);
      if (sums != nullptr) sum[k] = _mm256_add_epi32(sum[k], n[k]);
    }
    if (pass.count == 0) continue;
    // [v0 lo, v1 lo | v0 hi, v1 hi] -> [v0, v1] as 16-bit, then bytes.
    const __m256i ab = _mm256_permute4x64_epi64(_mm256_packus_epi32(n[0], n[1]), 0xD8);
    const __m256i cc = _mm256_permute4x64_epi64(_mm256_packus_epi32(n[2], n[2]), 0xD8);
    const __m128i ab8 = _mm_packus_epi16(_mm256_castsi256_si128(ab), _mm256_extracti128_si256(ab, 1));
    const __m128i c8 = _mm_packus_epi16(_mm256_castsi256_si128(cc), _mm256_castsi256_si128(cc));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), ab8);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 16), c8);
  }
  if (sums != nullptr) {
    alignas(32) std::int32_t lanes[3][8];
    for (int k = 0; k < 3; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[k]), sum[k]);
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 8; ++j) sums->sum[(8 * k + j) % 3] += lanes[k][j];
  }
  return i;
}

}  // namespace conveyor::ops::detail
#endif
