#include "src/train/layers/buffer.h"

#include <string>

#include "conveyor/error.h"

namespace conveyor::nn {

Tensor Buffer::tensor(Shape4 shape, DType type) const {
  const Tensor t{data_, shape, type};
  if (t.bytes() > bytes_)
    throw InvalidArgument("a tensor of " + std::to_string(t.bytes()) + " bytes does not fit a buffer of " +
                          std::to_string(bytes_));
  return t;
}

}  // namespace conveyor::nn
