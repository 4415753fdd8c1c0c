#include "src/train/input_images.h"

#include <cstdio>

#include "conveyor/error.h"

namespace conveyor::train {
namespace {

const char* name_of(ops::ElementType type) {
  switch (type) {
    case ops::ElementType::float32:
      return "float32";
    case ops::ElementType::float16:
      return "float16";
    case ops::ElementType::bfloat16:
      return "bfloat16";
  }
  return "?";
}

}  // namespace

std::string describe(const ops::NormalizeParams& params, int channels) {
  std::string text =
      std::string(name_of(params.type)) + (params.layout == ops::TensorLayout::hwc ? " NHWC" : " NCHW");
  const auto list = [&](const std::array<float, 4>& values) {
    std::string out = "{";
    for (int c = 0; c < channels; ++c) {
      char number[32];
      std::snprintf(number, sizeof number, "%s%g", c ? ", " : "", static_cast<double>(values[c]));
      out += number;
    }
    return out + "}";
  };
  return text + ", mean " + list(params.mean) + ", std " + list(params.std);
}

bool takes_images(const DeviceBatch& batch, const ops::NormalizeParams& model, int channels) {
  const std::optional<ops::NormalizeParams>& made = batch.images_normalization();
  if (batch.images().data == nullptr || !made) return false;
  bool same = made->type == model.type && made->layout == model.layout;
  for (int c = 0; c < channels; ++c)
    same = same && made->mean[c] == model.mean[c] && made->std[c] == model.std[c];
  if (same) return true;
  if (batch.images_augmented())
    throw InvalidArgument("trainer: the batch's images carry the feeder's augmentation as " +
                          describe(*made, channels) + ", but the model takes " + describe(model, channels) +
                          "; set FeederOptions::normalize to the trainer's input_normalization()");
  return false;
}

}  // namespace conveyor::train
