#include <string>

#include "conveyor/error.h"
#include "conveyor/train/trainer.h"

namespace conveyor::train {

const char* to_string(Precision precision) noexcept {
  switch (precision) {
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
    case Precision::fp32:
      break;
  }
  return "fp32";
}

const char* to_string(ModelKind model) noexcept {
  return model == ModelKind::resnet18 ? "resnet18" : "small_resnet";
}

Precision parse_precision(std::string_view text) {
  if (text == "fp32") return Precision::fp32;
  if (text == "bf16") return Precision::bf16;
  if (text == "fp16") return Precision::fp16;
  throw InvalidArgument("unknown precision '" + std::string(text) + "' (fp32, bf16 or fp16)");
}

ModelKind parse_model(std::string_view text) {
  if (text == "small_resnet") return ModelKind::small_resnet;
  if (text == "resnet18") return ModelKind::resnet18;
  throw InvalidArgument("unknown model '" + std::string(text) + "' (small_resnet or resnet18)");
}

}  // namespace conveyor::train
