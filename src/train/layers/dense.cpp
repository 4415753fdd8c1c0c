#include "src/train/layers/dense.h"

#include "conveyor/error.h"

namespace conveyor::nn {

Dense::Dense(std::string name, int batch, int in_features, int out_features)
    : name_(std::move(name)), batch_(batch), in_(in_features), out_(out_features) {
  if (batch < 1 || in_features < 1 || out_features < 1) throw InvalidArgument(name_ + ": empty dense layer");
}

}  // namespace conveyor::nn
