#include "conveyor/ops/normalize.h"

#include <cmath>
#include <string>

#include "conveyor/error.h"
#include "src/core/float16.h"

namespace conveyor::ops {
namespace {

// (pixel - mean) / std computed as one fused multiply-add with precomputed 1/std and -mean/std: the
// GPU kernel does exactly this, so both give the same bits.
struct Affine {
  std::array<float, 4> scale{}, bias{};
};

Affine affine_of(const NormalizeParams& params, int channels) {
  if (channels < 1 || channels > 4)
    throw InvalidArgument("normalize: " + std::to_string(channels) + " channels; 1 to 4 are supported");
  Affine a;
  for (int c = 0; c < channels; ++c) {
    if (!(params.std[c] != 0.f) || !std::isfinite(params.std[c]))
      throw InvalidArgument("normalize: std of channel " + std::to_string(c) +
                            " must be finite and non-zero");
    a.scale[c] = 1.f / params.std[c];
    a.bias[c] = -params.mean[c] * a.scale[c];
  }
  return a;
}

template <class Store>
void normalize_rows(ConstImageView image, const Affine& a, TensorLayout layout, Store&& store) {
  const int C = image.channels;
  const std::size_t plane = static_cast<std::size_t>(image.height) * image.width;
  for (int y = 0; y < image.height; ++y) {
    const std::uint8_t* row = image.row(y);
    for (int x = 0; x < image.width; ++x)
      for (int c = 0; c < C; ++c) {
        const float v = std::fma(static_cast<float>(row[x * C + c]), a.scale[c], a.bias[c]);
        const std::size_t pixel = static_cast<std::size_t>(y) * image.width + x;
        store(layout == TensorLayout::hwc ? pixel * C + c : c * plane + pixel, v);
      }
  }
}

void normalize_with(ConstImageView image, const Affine& a, const NormalizeParams& params, void* out) {
  switch (params.type) {
    case ElementType::float32: {
      auto* o = static_cast<float*>(out);
      normalize_rows(image, a, params.layout, [o](std::size_t i, float v) { o[i] = v; });
      break;
    }
    case ElementType::float16: {
      auto* o = static_cast<std::uint16_t*>(out);
      normalize_rows(image, a, params.layout, [o](std::size_t i, float v) { o[i] = nn::float_to_half(v); });
      break;
    }
    case ElementType::bfloat16: {
      auto* o = static_cast<std::uint16_t*>(out);
      normalize_rows(image, a, params.layout,
                     [o](std::size_t i, float v) { o[i] = nn::float_to_bfloat16(v); });
      break;
    }
  }
}

}  // namespace

std::size_t element_size(ElementType type) noexcept { return type == ElementType::float32 ? 4 : 2; }

void normalize(ConstImageView image, const NormalizeParams& params, void* out) {
  if (image.empty()) throw InvalidArgument("normalize: empty image");
  normalize_with(image, affine_of(params, image.channels), params, out);
}

void normalize_batch(const std::uint8_t* nhwc, std::size_t count, ImageShape shape,
                     const NormalizeParams& params, void* out) {
  if (count == 0) return;
  if (!nhwc || shape.empty()) throw InvalidArgument("normalize_batch: empty input");
  const Affine a = affine_of(params, shape.channels);
  const std::size_t out_bytes = shape.bytes() * element_size(params.type);
  for (std::size_t i = 0; i < count; ++i)
    normalize_with(ConstImageView(nhwc + i * shape.bytes(), shape), a, params,
                   static_cast<std::uint8_t*>(out) + i * out_bytes);
}

}  // namespace conveyor::ops
