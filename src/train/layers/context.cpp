#include "src/train/layers/context.h"

#include <oneapi/tbb/task_arena.h>

#include <string>

#include "conveyor/error.h"

#ifdef CONVEYOR_HAVE_CUDA
#include "src/train/layers/cuda_context.h"
#else
namespace conveyor::nn {
class CudaContext {};  // never created without CUDA; complete so that unique_ptr can delete it
}  // namespace conveyor::nn
#endif

namespace conveyor::nn {

void* Buffer::data() const noexcept {
#ifdef CONVEYOR_HAVE_CUDA
  if (device_) return device_.data();
#endif
  return bytes_ ? const_cast<double*>(host_.data()) : nullptr;
}

Tensor Buffer::tensor(Shape4 shape, DType type) const {
  const Tensor t{data(), shape, type};
  if (t.bytes() > bytes_)
    throw InvalidArgument("a tensor of " + std::to_string(t.bytes()) + " bytes does not fit a buffer of " +
                          std::to_string(bytes_));
  return t;
}

Context::Context() = default;

#ifdef CONVEYOR_HAVE_CUDA
Context::Context(int device, DType dtype, std::size_t memory_limit_bytes)
    : dtype_(dtype),
      device_(device),
      cuda_(std::make_unique<CudaContext>(device, dtype, memory_limit_bytes)) {}

CudaContext& Context::cuda() const { return *cuda_; }
void Context::set_deterministic_algorithms(bool on) { cuda_->set_deterministic_algorithms(on); }
void Context::use_algorithm_cache(const std::filesystem::path& folder) { cuda_->use_algorithm_cache(folder); }
AlgorithmCache* Context::algorithm_cache() const { return cuda_->algorithm_cache(); }
cudaStream_t Context::stream() const { return cuda_->stream(); }
#endif

Context::~Context() = default;

Buffer Context::allocate(std::size_t bytes, std::string_view what_for) {
  Buffer b;
  if (bytes == 0) return b;
  b.bytes_ = bytes;
#ifdef CONVEYOR_HAVE_CUDA
  if (cuda_) {
    // Rounded up to 256 bytes so that every buffer starts aligned for vector loads and tensor cores.
    const std::size_t rounded = (bytes + 255) & ~std::size_t{255};
    b.device_ = cuda_->pool().allocate(rounded, cuda_->stream(), what_for);
    CONVEYOR_CUDA(cudaMemsetAsync(b.device_.data(), 0, rounded, cuda_->stream()), std::string(what_for));
    return b;
  }
#endif
  (void)what_for;
  b.host_.assign((bytes + sizeof(double) - 1) / sizeof(double), 0.0);
  return b;
}

void Context::allocate_workspace() {
#ifdef CONVEYOR_HAVE_CUDA
  if (cuda_) cuda_->allocate_workspace();
#endif
}

void Context::synchronize() const {
#ifdef CONVEYOR_HAVE_CUDA
  if (cuda_) CONVEYOR_CUDA(cudaStreamSynchronize(cuda_->stream()), "Context::synchronize");
#endif
}

std::string Context::describe() const {
#ifdef CONVEYOR_HAVE_CUDA
  if (cuda_)
    return "GPU " + std::to_string(device_) + " (" + cuda_->device_name() + "), " + to_string(dtype_) +
           " NHWC";
#endif
  return "CPU reference, " + std::to_string(tbb::this_task_arena::max_concurrency()) + " threads, fp32 NHWC";
}

}  // namespace conveyor::nn
