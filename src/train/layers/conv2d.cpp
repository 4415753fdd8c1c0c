#include "src/train/layers/conv2d.h"

#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"

#ifdef CONVEYOR_HAVE_CUDA
#include "src/train/layers/algorithm_cache.h"
#include "src/train/layers/conv2d_cudnn.h"
#else
namespace conveyor::nn {
class ConvCudnn {};  // never created without CUDA
}  // namespace conveyor::nn
#endif

namespace conveyor::nn {

Conv2d::Conv2d(std::string name, ConvGeometry geometry, bool needs_input_grad)
    : name_(std::move(name)), geometry_(geometry), needs_input_grad_(needs_input_grad) {
  const Shape4 out = geometry.output();
  if (geometry.kernel < 1 || geometry.stride < 1 || geometry.pad < 0 || geometry.out_channels < 1 ||
      out.h < 1 || out.w < 1 || geometry.input.count() == 0)
    throw InvalidArgument(name_ + ": invalid convolution geometry");
}

Conv2d::~Conv2d() = default;
Conv2d::Conv2d(Conv2d&&) noexcept = default;
Conv2d& Conv2d::operator=(Conv2d&&) noexcept = default;

void Conv2d::prepare(Context& ctx, const Tensor& x, const void* w, const Tensor& y, const Tensor& dx,
                     void* dw) {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) {
    cudnn_ = std::make_unique<ConvCudnn>(ctx.cuda(), name_, geometry_, needs_input_grad_);
    cudnn_->choose_algorithms(ctx.cuda(), x, w, y, dx, dw);
  }
#else
  (void)ctx, (void)x, (void)w, (void)y, (void)dx, (void)dw;
#endif
}

bool Conv2d::prepares_without_timing(Context& ctx) const {
#ifdef CONVEYOR_HAVE_CUDA
  if (!ctx.on_gpu()) return true;
  CudaContext& cuda = ctx.cuda();
  if (cuda.deterministic_algorithms()) return true;
  const std::string key = convolution_key(geometry_, cuda.dtype(), needs_input_grad_);
  const AlgorithmCache* disk = cuda.algorithm_cache();
  return cuda.conv_algorithms().count(key) > 0 || (disk != nullptr && disk->find(key) != nullptr);
#else
  (void)ctx;
  return true;
#endif
}

void Conv2d::forward(Context& ctx, const Tensor& x, const void* w, const Tensor& y) const {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) return cudnn_->forward(ctx.cuda(), x, w, y);
#endif
  (void)ctx;
  cpu::conv2d_forward(geometry_, x.as<const float>(), static_cast<const float*>(w), y.as<float>());
}

void Conv2d::backward_data(Context& ctx, const Tensor& dy, const void* w, const Tensor& dx,
                           bool accumulate) const {
  if (!needs_input_grad_)
    throw InvalidArgument(name_ + ": backward_data on a layer built without input gradient");
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) return cudnn_->backward_data(ctx.cuda(), dy, w, dx, accumulate);
#endif
  (void)ctx;
  cpu::conv2d_backward_data(geometry_, dy.as<const float>(), static_cast<const float*>(w), dx.as<float>(),
                            accumulate);
}

void Conv2d::backward_filter(Context& ctx, const Tensor& x, const Tensor& dy, void* dw) const {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) return cudnn_->backward_filter(ctx.cuda(), x, dy, dw);
#endif
  (void)ctx;
  cpu::conv2d_backward_filter(geometry_, x.as<const float>(), dy.as<const float>(), static_cast<float*>(dw));
}

std::string Conv2d::describe() const {
  const Shape4 in = geometry_.input;
  std::string text = name_ + " " + std::to_string(geometry_.kernel) + "x" + std::to_string(geometry_.kernel) +
                     "/" + std::to_string(geometry_.stride) + " " + std::to_string(in.c) + "->" +
                     std::to_string(geometry_.out_channels) + " on " + std::to_string(in.h) + "x" +
                     std::to_string(in.w);
#ifdef CONVEYOR_HAVE_CUDA
  if (cudnn_) text += ": " + cudnn_->describe();
#endif
  return text;
}

}  // namespace conveyor::nn
