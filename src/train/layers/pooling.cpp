#include "src/train/layers/pooling.h"

#include "conveyor/error.h"

namespace conveyor::nn {

void check_geometry(const std::string& name, const PoolGeometry& g) {
  const Shape4 out = g.output();
  if (g.window < 1 || g.stride < 1 || g.pad < 0 || g.pad >= g.window)
    throw InvalidArgument(name + ": invalid pooling geometry (window " + std::to_string(g.window) +
                          ", stride " + std::to_string(g.stride) + ", pad " + std::to_string(g.pad) +
                          "; the padding must be smaller than the window)");
  if (out.h < 1 || out.w < 1 || g.input.count() == 0)
    throw InvalidArgument(name + ": a " + std::to_string(g.window) + "x" + std::to_string(g.window) +
                          " pooling window makes no output from " + std::to_string(g.input.h) + "x" +
                          std::to_string(g.input.w));
}

Pool2d::Pool2d(std::string name, PoolGeometry geometry, PoolMode mode, bool global)
    : name_(std::move(name)), geometry_(geometry), mode_(mode), global_(global) {
  if (global_) {
    if (geometry_.input.count() == 0) throw InvalidArgument(name_ + ": empty pooling input");
  } else {
    check_geometry(name_, geometry_);
  }
}

Shape4 Pool2d::output_shape() const noexcept {
  return global_ ? Shape4{geometry_.input.n, 1, 1, geometry_.input.c} : geometry_.output();
}

}  // namespace conveyor::nn
