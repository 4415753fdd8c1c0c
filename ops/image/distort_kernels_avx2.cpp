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
  // The copy keeps the steps in registers: the stores into `row` could alias `pass` otherwise.
  const int count = pass.count;
  ColorAdjustment what[4] = {};
  __m256 factor[4], shift[4], hue[9];
  for (int s = 0; s < count; ++s) {
    what[s] = pass.steps[s].what;
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
    __m256i ri = _mm256_cvtepu8_epi32(rg), gi = _mm256_cvtepu8_epi32(_mm_srli_si128(rg, 8)),
            bi = _mm256_cvtepu8_epi32(bb);
    if (count > 0) {
      __m256 r = _mm256_cvtepi32_ps(ri), g = _mm256_cvtepi32_ps(gi), b = _mm256_cvtepi32_ps(bi);
      for (int s = 0;; ++s) {
        // Each step's value before clamping and truncation: the last step leaves both to the integer
        // packs below (cvttps2dq then saturation to 0..255 gives what to_8bit then cvttps2dq gives).
        __m256 r2, g2, b2;
        switch (what[s]) {
          case ColorAdjustment::brightness:
          case ColorAdjustment::contrast:
            r2 = _mm256_add_ps(_mm256_mul_ps(r, factor[s]), shift[s]);
            g2 = _mm256_add_ps(_mm256_mul_ps(g, factor[s]), shift[s]);
            b2 = _mm256_add_ps(_mm256_mul_ps(b, factor[s]), shift[s]);
            break;
          case ColorAdjustment::saturation: {
            const __m256 keep = _mm256_sub_ps(_mm256_set1_ps(1.0f), factor[s]);
            const __m256 gray = _mm256_mul_ps(
                _mm256_cvtepi32_ps(_mm256_cvttps_epi32(dot(gray_r, r, gray_g, g, gray_b, b))), keep);
            r2 = _mm256_add_ps(_mm256_mul_ps(r, factor[s]), gray);
            g2 = _mm256_add_ps(_mm256_mul_ps(g, factor[s]), gray);
            b2 = _mm256_add_ps(_mm256_mul_ps(b, factor[s]), gray);
            break;
          }
          case ColorAdjustment::hue:
          default:
            r2 = _mm256_add_ps(dot(hue[0], r, hue[1], g, hue[2], b), half);
            g2 = _mm256_add_ps(dot(hue[3], r, hue[4], g, hue[5], b), half);
            b2 = _mm256_add_ps(dot(hue[6], r, hue[7], g, hue[8], b), half);
            break;
        }
        if (s + 1 == count) {
          ri = _mm256_cvttps_epi32(r2);
          gi = _mm256_cvttps_epi32(g2);
          bi = _mm256_cvttps_epi32(b2);
          break;
        }
        r = to_8bit(r2);
        g = to_8bit(g2);
        b = to_8bit(b2);
      }
      // Signed saturation to 16 bits, then unsigned to 8: every int lands where clamping to 0..255 puts it.
      // In each 128-bit lane: r g b b, 4 pixels each; one byte shuffle interleaves them, one dword
      // permutation closes the gap between the lanes.
      const __m256i rg16 = _mm256_packs_epi32(ri, gi);
      const __m256i bb16 = _mm256_packs_epi32(bi, bi);
      const __m256i bytes = _mm256_packus_epi16(rg16, bb16);
      const __m256i interleaved = _mm256_shuffle_epi8(
          bytes, _mm256_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1,  //
                                  0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1));
      const __m256i packed = _mm256_permutevar8x32_epi32(interleaved, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 16), _mm256_extracti128_si256(packed, 1));
      if (sums != nullptr) {
        const __m256i zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(255);
        ri = _mm256_min_epi32(_mm256_max_epi32(ri, zero), top);
        gi = _mm256_min_epi32(_mm256_max_epi32(gi, zero), top);
        bi = _mm256_min_epi32(_mm256_max_epi32(bi, zero), top);
      }
    }
    if (sums != nullptr) {
      sum_r = _mm256_add_epi32(sum_r, ri);
      sum_g = _mm256_add_epi32(sum_g, gi);
      sum_b = _mm256_add_epi32(sum_b, bi);
    }
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
  const int count = pass.count;
  __m256 factor[4], shift[4];
  for (int s = 0; s < count; ++s) {
    factor[s] = _mm256_set1_ps(pass.steps[s].factor);
    shift[s] = _mm256_set1_ps(pass.steps[s].shift);
  }
  const __m256i zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(255);
  // In each lane after the packs: values 0-3 of v0, v1, v2, v2 (low lane) and 4-7 (high lane).
  const __m256i in_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  // Blocks of 24 values (8 RGB pixels): the channel of lane j of vector k is (8k + j) % 3 in every block.
  __m256i sum[3] = {zero, zero, zero};
  int i = 0;
  for (; i + 24 <= values; i += 24) {
    std::uint8_t* p = row + i;
    __m256i n[3];
    for (std::ptrdiff_t k = 0; k < 3; ++k)
      n[k] = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * k)));
    if (count > 0) {
      for (int k = 0; k < 3; ++k) {
        __m256 v = _mm256_cvtepi32_ps(n[k]);
        for (int s = 0; s + 1 < count; ++s) v = scale_and_shift(v, factor[s], shift[s]);
        // The last step's clamp and truncation: cvttps2dq here, saturation in the packs.
        n[k] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(v, factor[count - 1]), shift[count - 1]));
      }
      const __m256i ab = _mm256_packs_epi32(n[0], n[1]);
      const __m256i cc = _mm256_packs_epi32(n[2], n[2]);
      const __m256i packed = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cc), in_order);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 16), _mm256_extracti128_si256(packed, 1));
      if (sums != nullptr)
        for (int k = 0; k < 3; ++k) n[k] = _mm256_min_epi32(_mm256_max_epi32(n[k], zero), top);
    }
    if (sums != nullptr)
      for (int k = 0; k < 3; ++k) sum[k] = _mm256_add_epi32(sum[k], n[k]);
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
