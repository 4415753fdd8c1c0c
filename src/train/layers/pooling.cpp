#include "src/train/layers/pooling.h"

#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"

#ifdef CONVEYOR_HAVE_CUDA
#include "src/train/layers/pooling_cudnn.h"
#else
namespace conveyor::nn {
class PoolCudnn {};  // never created without CUDA
}  // namespace conveyor::nn
#endif

namespace conveyor::nn {

Pool2d::Pool2d(std::string name, PoolGeometry geometry, PoolMode mode)
    : name_(std::move(name)), geometry_(geometry), mode_(mode) {
  const Shape4 out = geometry.output();
  if (geometry.window < 1 || geometry.stride < 1 || geometry.pad < 0 || geometry.pad >= geometry.window ||
      out.h < 1 || out.w < 1)
    throw InvalidArgument(name_ + ": invalid pooling geometry");
}

Pool2d Pool2d::global_average(std::string name, Shape4 input) {
  Pool2d pool(std::move(name), PoolGeometry{input, 1, 1, 0}, PoolMode::average);
  pool.global_ = true;
  return pool;
}

Pool2d::~Pool2d() = default;
Pool2d::Pool2d(Pool2d&&) noexcept = default;
Pool2d& Pool2d::operator=(Pool2d&&) noexcept = default;

Shape4 Pool2d::output_shape() const noexcept {
  return global_ ? Shape4{geometry_.input.n, 1, 1, geometry_.input.c} : geometry_.output();
}

void Pool2d::prepare(Context& ctx) {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) {
    const Shape4 in = geometry_.input;
    gpu_ = global_ ? std::make_unique<PoolCudnn>(ctx.cuda(), name_, in, output_shape(), PoolMode::average,
                                                 in.h, in.w, 0, in.h, in.w)
                   : std::make_unique<PoolCudnn>(ctx.cuda(), name_, in, output_shape(), mode_,
                                                 geometry_.window, geometry_.window, geometry_.pad,
                                                 geometry_.stride, geometry_.stride);
  }
#else
  (void)ctx;
#endif
}

void Pool2d::forward(Context& ctx, const Tensor& x, const Tensor& y) const {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) {
    if (!gpu_) throw InvalidArgument(name_ + ": prepare() the layer before running it");
    return gpu_->forward(ctx.cuda(), x, y);
  }
#endif
  (void)ctx;
  if (global_)
    cpu::global_avg_pool_forward(geometry_.input, x.as<const float>(), y.as<float>());
  else if (mode_ == PoolMode::max)
    cpu::max_pool_forward(geometry_, x.as<const float>(), y.as<float>());
  else
    cpu::avg_pool_forward(geometry_, x.as<const float>(), y.as<float>());
}

void Pool2d::backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                      const Tensor& dx) const {
#ifdef CONVEYOR_HAVE_CUDA
  if (ctx.on_gpu()) {
    if (!gpu_) throw InvalidArgument(name_ + ": prepare() the layer before running it");
    return gpu_->backward(ctx.cuda(), x, y, dy, dx);
  }
#endif
  (void)ctx, (void)y;
  if (global_)
    cpu::global_avg_pool_backward(geometry_.input, dy.as<const float>(), dx.as<float>());
  else if (mode_ == PoolMode::max)
    cpu::max_pool_backward(geometry_, x.as<const float>(), dy.as<const float>(), dx.as<float>());
  else
    cpu::avg_pool_backward(geometry_, dy.as<const float>(), dx.as<float>());
}

}  // namespace conveyor::nn
