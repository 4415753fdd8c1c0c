// The cuDNN twin of Conv2d: descriptors for NHWC activations and KRSC filters, and one algorithm per
// direction chosen at warm-up by timing the candidates with cudnnFind*Ex on the real buffers, or taken
// from the algorithm cache on disk once cuDNN has accepted it again for this shape.
#pragma once

#include <optional>
#include <string>

#include "src/train/layers/cuda_context.h"

namespace conveyor::nn {

class ConvCudnn {
 public:
  ConvCudnn(CudaContext& cuda, std::string name, const ConvGeometry& geometry, bool needs_input_grad);

  // Looks the shape up in the context's memory, then in its algorithm cache on disk, or times every
  // algorithm (16-bit types may use tensor cores; fp32 is restricted to FMA math, so no TF32), then
  // reserves the chosen algorithms' workspace.
  void choose_algorithms(CudaContext& cuda, const Tensor& x, const void* w, const Tensor& y, const Tensor& dx,
                         void* dw);

  void forward(CudaContext& cuda, const Tensor& x, const void* w, const Tensor& y) const;
  void backward_data(CudaContext& cuda, const Tensor& dy, const void* w, const Tensor& dx,
                     bool accumulate) const;
  void backward_filter(CudaContext& cuda, const Tensor& x, const Tensor& dy, void* dw) const;
  std::string describe() const;

 private:
  void require_ready() const;
  ConvAlgorithms search(CudaContext& cuda, const Tensor& x, const void* w, const Tensor& y, const Tensor& dx,
                        void* dw);
  // The cached choices when each algorithm and math type is one cuDNN has and cuDNN sizes its workspace for
  // this shape in that math type, within `budget`. Otherwise nullopt, with `why` and `refused` (true: cuDNN
  // does not accept the entry; false: it only does not fit the room there is now). Leaves the descriptors'
  // math types as the constructor set them.
  std::optional<ConvAlgorithms> accept_cached(CudaContext& cuda, const ConvolutionChoices& cached,
                                              std::size_t budget, std::string& why, bool& refused);
  void reset_math_types();
  std::string name_;
  ConvGeometry geometry_;
  DType dtype_;
  bool needs_input_grad_;
  TensorDescriptor x_desc_, y_desc_;
  FilterDescriptor w_desc_;
  // One per direction: each carries the math type of its own chosen algorithm.
  ConvolutionDescriptor forward_desc_, backward_data_desc_, backward_filter_desc_;
  ConvAlgorithms algorithms_;
  bool ready_ = false;
};

}  // namespace conveyor::nn
