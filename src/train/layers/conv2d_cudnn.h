// The cuDNN twin of Conv2d: descriptors for NHWC activations and KRSC filters, and one algorithm per
// direction chosen at prepare() by timing the candidates with cudnnFind*Ex on the real buffers, by cuDNN's
// heuristics (deterministic), or taken from the algorithm cache on disk once cuDNN has accepted it again
// for this shape.
#pragma once

#include <optional>
#include <string>

#include "src/train/layers/conv2d.h"
#include "src/train/layers/cuda_context.h"

namespace conveyor::nn {

class Conv2dCudnn final : public Conv2d {
 public:
  Conv2dCudnn(CudaContext& cuda, std::string name, const ConvGeometry& geometry, bool needs_input_grad);

  // Looks the shape up in the context's memory, then in its algorithm cache on disk, or times every
  // algorithm (16-bit types may use tensor cores; fp32 is restricted to FMA math, so no TF32), then
  // reserves the chosen algorithms' workspace.
  void prepare(const Tensor& x, const void* w, const Tensor& y, const Tensor& dx, void* dw) override;
  void forward(const Tensor& x, const void* w, const Tensor& y) const override;
  void backward_filter(const Tensor& x, const Tensor& dy, void* dw) const override;

 private:
  void run_backward_data(const Tensor& dy, const void* w, const Tensor& dx, bool accumulate) const override;
  std::string algorithms() const override;
  void require_ready() const;
  ConvAlgorithms search(const Tensor& x, const void* w, const Tensor& y, const Tensor& dx, void* dw);
  // The cached choices when each algorithm and math type is one cuDNN has and cuDNN sizes its workspace for
  // this shape in that math type, within `budget`. Otherwise nullopt, with `why` and `refused` (true: cuDNN
  // does not accept the entry; false: it only does not fit the room there is now). Leaves the descriptors'
  // math types as the constructor set them.
  std::optional<ConvAlgorithms> accept_cached(const ConvolutionChoices& cached, std::size_t budget,
                                              std::string& why, bool& refused);
  void reset_math_types();

  CudaContext& cuda_;
  DType dtype_;
  TensorDescriptor x_desc_, y_desc_;
  FilterDescriptor w_desc_;
  // One per direction: each carries the math type of its own chosen algorithm.
  ConvolutionDescriptor forward_desc_, backward_data_desc_, backward_filter_desc_;
  ConvAlgorithms algorithms_;
  bool ready_ = false;
};

}  // namespace conveyor::nn
