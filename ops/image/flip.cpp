#include "conveyor/ops/flip.h"

#include <cstring>
#include <opencv2/core.hpp>
#include <string>
#include <utility>

#include "conveyor/error.h"
#include "conveyor/random.h"
#include "ops/image/cv_view.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CONVEYOR_SSSE3_FLIP 1
#endif

namespace conveyor::ops {
namespace {

// Mirroring 3-byte pixels is the one flip OpenCV does byte by byte (about as slow as a colour-jitter pass on
// a 224 x 224 image); with SSSE3 byte shuffles 16 pixels are reversed in a few instructions.
#ifdef CONVEYOR_SSSE3_FLIP
// Reverses the order of the 16 RGB pixels held in (a, b, c), bytes 0..47: output byte k comes from input
// byte 3 * (15 - k / 3) + k % 3. The -1 lanes of a mask produce zero, so the pieces combine with OR.
__attribute__((target("ssse3"))) inline void reverse16(__m128i& a, __m128i& b, __m128i& c) {
  const __m128i o0 = _mm_or_si128(
      _mm_shuffle_epi8(c, _mm_setr_epi8(13, 14, 15, 10, 11, 12, 7, 8, 9, 4, 5, 6, 1, 2, 3, -1)),
      _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 14)));
  const __m128i o1 = _mm_or_si128(
      _mm_or_si128(
          _mm_shuffle_epi8(b, _mm_setr_epi8(15, -1, 11, 12, 13, 8, 9, 10, 5, 6, 7, 2, 3, 4, -1, 0)),
          _mm_shuffle_epi8(c, _mm_setr_epi8(-1, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1))),
      _mm_shuffle_epi8(a, _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 15, -1)));
  const __m128i o2 = _mm_or_si128(
      _mm_shuffle_epi8(b, _mm_setr_epi8(1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)),
      _mm_shuffle_epi8(a, _mm_setr_epi8(-1, 12, 13, 14, 9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2)));
  a = o0;
  b = o1;
  c = o2;
}

// Swaps 16-pixel blocks from both ends, each reversed, until fewer than 32 pixels are left in the middle.
__attribute__((target("ssse3"))) std::uint8_t* mirror_blocks(std::uint8_t* left, std::uint8_t*& right) {
  const auto load = [](const std::uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  };
  const auto store = [](std::uint8_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); };
  while (right - left >= 96) {
    right -= 48;
    __m128i la = load(left), lb = load(left + 16), lc = load(left + 32);
    __m128i ra = load(right), rb = load(right + 16), rc = load(right + 32);
    reverse16(la, lb, lc);
    reverse16(ra, rb, rc);
    store(left, ra);
    store(left + 16, rb);
    store(left + 32, rc);
    store(right, la);
    store(right + 16, lb);
    store(right + 32, lc);
    left += 48;
  }
  return left;
}
#endif

// Mirrors each row of a 3-channel image in place.
void mirror_rgb_rows(ImageView image) {
#ifdef CONVEYOR_SSSE3_FLIP
  const bool ssse3 = __builtin_cpu_supports("ssse3");
#endif
  for (int y = 0; y < image.height; ++y) {
    std::uint8_t* left = image.row(y);
    std::uint8_t* right = left + static_cast<std::ptrdiff_t>(image.width) * 3;  // one past the last pixel
#ifdef CONVEYOR_SSSE3_FLIP
    if (ssse3) left = mirror_blocks(left, right);
#endif
    for (std::uint8_t* last = right - 3; left < last; left += 3, last -= 3) {
      std::swap(left[0], last[0]);
      std::swap(left[1], last[1]);
      std::swap(left[2], last[2]);
    }
  }
}

void check(ConstImageView image, ImageView out, const char* what) {
  if (image.empty()) throw InvalidArgument(std::string(what) + ": empty image");
  if (image.shape() != out.shape()) throw InvalidArgument(std::string(what) + ": output shape differs");
}

void copy_rows(ConstImageView image, ImageView out) {
  const std::size_t bytes = static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.channels);
  for (int y = 0; y < image.height; ++y) std::memcpy(out.row(y), image.row(y), bytes);
}

}  // namespace

bool draw_flip(double p, std::uint64_t seed, std::uint64_t stream) {
  Rng rng(seed, stream);
  return rng.bernoulli(p);
}

void flip_horizontal(ImageView image) {
  check(image, image, "flip_horizontal");
  if (image.channels == 3) {
    mirror_rgb_rows(image);
    return;
  }
  cv::Mat mat = detail::as_mat(image);
  cv::flip(mat, mat, 1);  // in place is fine: OpenCV swaps mirrored pairs
}

void flip_vertical(ImageView image) {
  check(image, image, "flip_vertical");
  cv::Mat mat = detail::as_mat(image);
  cv::flip(mat, mat, 0);
}

void flip_horizontal(ConstImageView image, ImageView out) {
  check(image, out, "flip_horizontal");
  if (image.channels == 3) {
    copy_rows(image, out);  // a copy plus the in-place mirror beats OpenCV's byte-wise mirror
    mirror_rgb_rows(out);
    return;
  }
  cv::Mat dst = detail::as_mat(out);
  cv::flip(detail::as_mat(image), dst, 1);
}

void flip_vertical(ConstImageView image, ImageView out) {
  check(image, out, "flip_vertical");
  cv::Mat dst = detail::as_mat(out);
  cv::flip(detail::as_mat(image), dst, 0);
}

}  // namespace conveyor::ops
