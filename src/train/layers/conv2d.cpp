#include "src/train/layers/conv2d.h"

#include "conveyor/error.h"

namespace conveyor::nn {

void check_geometry(const std::string& name, const ConvGeometry& g) {
  const Shape4 out = g.output();
  if (g.kernel < 1 || g.stride < 1 || g.pad < 0 || g.out_channels < 1 || g.input.count() == 0)
    throw InvalidArgument(name + ": invalid convolution geometry (kernel " + std::to_string(g.kernel) +
                          ", stride " + std::to_string(g.stride) + ", pad " + std::to_string(g.pad) + ", " +
                          std::to_string(g.out_channels) + " output channels)");
  if (out.h < 1 || out.w < 1)
    throw InvalidArgument(name + ": a " + std::to_string(g.kernel) + "x" + std::to_string(g.kernel) + "/" +
                          std::to_string(g.stride) + " convolution with pad " + std::to_string(g.pad) +
                          " makes no output from " + std::to_string(g.input.h) + "x" +
                          std::to_string(g.input.w));
}

Conv2d::Conv2d(std::string name, ConvGeometry geometry, bool needs_input_grad)
    : name_(std::move(name)), geometry_(geometry), needs_input_grad_(needs_input_grad) {
  check_geometry(name_, geometry_);
}

void Conv2d::backward_data(const Tensor& dy, const void* w, const Tensor& dx, bool accumulate) const {
  if (!needs_input_grad_)
    throw InvalidArgument(name_ + ": backward_data on a layer built without input gradient");
  run_backward_data(dy, w, dx, accumulate);
}

std::string describe_geometry(const std::string& name, const ConvGeometry& g) {
  return name + " " + std::to_string(g.kernel) + "x" + std::to_string(g.kernel) + "/" +
         std::to_string(g.stride) + " " + std::to_string(g.input.c) + "->" + std::to_string(g.out_channels) +
         " on " + std::to_string(g.input.h) + "x" + std::to_string(g.input.w);
}

std::string Conv2d::describe() const {
  const std::string text = describe_geometry(name_, geometry_);
  const std::string chosen = algorithms();
  return chosen.empty() ? text : text + ": " + chosen;
}

}  // namespace conveyor::nn
