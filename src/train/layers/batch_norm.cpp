#include "src/train/layers/batch_norm.h"

#include "conveyor/error.h"

namespace conveyor::nn {

void check_batch_norm(const std::string& name, const Shape4& shape, const BatchNormOptions& options) {
  if (shape.count() == 0) throw InvalidArgument(name + ": empty batch-norm shape");
  if (options.residual && !options.relu)
    throw InvalidArgument(name + ": a residual add is only supported before a ReLU");
  if (!(options.epsilon > 0) || options.momentum < 0 || options.momentum > 1)
    throw InvalidArgument(name + ": epsilon must be positive and momentum in [0, 1]");
}

BatchNorm::BatchNorm(std::string name, Shape4 shape, BatchNormOptions options)
    : name_(std::move(name)), shape_(shape), options_(options) {
  check_batch_norm(name_, shape_, options_);
}

std::string BatchNorm::describe() const {
  return name_ + " batch norm" + (options_.residual ? " + add" : "") + (options_.relu ? " + ReLU" : "") +
         ": " + path();
}

}  // namespace conveyor::nn
