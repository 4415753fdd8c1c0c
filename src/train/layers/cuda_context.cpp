#include "src/train/layers/cuda_context.h"

#include <algorithm>

#include "src/train/layers/batch_norm_cudnn.h"
#include "src/train/layers/conv2d_cudnn.h"
#include "src/train/layers/dense_cublas.h"
#include "src/train/layers/loss_cuda.h"
#include "src/train/layers/pooling_cudnn.h"
#include "src/train/layers/sgd_cuda.h"

namespace conveyor::nn {

cudnnDataType_t cudnn_type(DType type) noexcept {
  switch (type) {
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    case DType::f16:
      return CUDNN_DATA_HALF;
    case DType::f32:
      break;
  }
  return CUDNN_DATA_FLOAT;
}

cudaDataType_t cublas_type(DType type) noexcept {
  switch (type) {
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f16:
      return CUDA_R_16F;
    case DType::f32:
      break;
  }
  return CUDA_R_32F;
}

TensorDescriptor make_nhwc_descriptor(const Shape4& s, DType type, const std::string& layer) {
  TensorDescriptor d;
  CONVEYOR_CUDNN(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NHWC, cudnn_type(type), s.n, s.c, s.h, s.w),
                 layer);
  return d;
}

namespace {

// A device allocation, back to its pool in stream order when the buffer dies.
struct DeviceStorage final : Storage {
  explicit DeviceStorage(cuda::DeviceBuffer b) noexcept : buffer(std::move(b)) {}
  cuda::DeviceBuffer buffer;
};

}  // namespace

CudaContext::CudaContext(int device, DType dtype, std::size_t memory_limit_bytes, bool deterministic,
                         bool urgent_stream)
    : Context(dtype, device),
      pool_(device, memory_limit_bytes),
      // A stream belongs to the device current when it is made.
      stream_([device, urgent_stream] {
        cuda::DeviceGuard guard(device);
        int least = 0, most = 0;  // numerically: the most urgent priority is the lowest number
        if (urgent_stream)
          CONVEYOR_CUDA(cudaDeviceGetStreamPriorityRange(&least, &most), "CudaContext (stream priority)");
        return cuda::Stream(urgent_stream ? most : 0);
      }()),
      deterministic_algorithms_(deterministic),
      elementwise_(stream_.get()) {
  cuda::DeviceGuard guard(device);
  cudaDeviceProp props{};
  CONVEYOR_CUDA(cudaGetDeviceProperties(&props, device), "CudaContext");
  device_name_ = props.name;
  environment_.gpu = props.name;
  environment_.compute_major = props.major;
  environment_.compute_minor = props.minor;
  environment_.sm_count = props.multiProcessorCount;
  CONVEYOR_CUDA(cudaDriverGetVersion(&environment_.driver), "CudaContext");
  CONVEYOR_CUDA(cudaRuntimeGetVersion(&environment_.runtime), "CudaContext");
  environment_.cudnn = static_cast<long long>(cudnnGetVersion());
  CONVEYOR_CUDNN(cudnnCreate(&cudnn_), "CudaContext");
  CONVEYOR_CUDNN(cudnnSetStream(cudnn_, stream_.get()), "CudaContext");
  CONVEYOR_CUBLAS(cublasCreate(&cublas_), "CudaContext");
  CONVEYOR_CUBLAS(cublasSetStream(cublas_, stream_.get()), "CudaContext");
  // cuBLAS would otherwise allocate its own workspace outside the pool (and outside any limit); 32 MiB is
  // what NVIDIA recommends for Hopper. A fixed workspace also keeps GEMMs capturable in a CUDA graph.
  constexpr std::size_t kCublasWorkspace = 32u << 20;
  cublas_workspace_ = pool_.allocate(kCublasWorkspace, stream_.get(), "cuBLAS workspace");
  CONVEYOR_CUBLAS(cublasSetWorkspace(cublas_, cublas_workspace_.data(), kCublasWorkspace), "CudaContext");
  // Default math: tensor cores for 16-bit inputs, and no TF32 for fp32 (fp32 means fp32 here; the
  // convolutions ask for FMA math likewise).
  CONVEYOR_CUBLAS(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH), "CudaContext");
}

CudaContext::~CudaContext() {
  cudaStreamSynchronize(stream_.get());
  if (cublas_) cublasDestroy(cublas_);
  if (cudnn_) cudnnDestroy(cudnn_);
}

Buffer CudaContext::allocate(std::size_t bytes, std::string_view what_for) {
  if (bytes == 0) return {};
  // Rounded up to 256 bytes so that every buffer starts aligned for vector loads and tensor cores.
  const std::size_t rounded = (bytes + 255) & ~std::size_t{255};
  auto storage = std::make_unique<DeviceStorage>(pool_.allocate(rounded, stream_.get(), what_for));
  void* data = storage->buffer.data();
  CONVEYOR_CUDA(cudaMemsetAsync(data, 0, rounded, stream_.get()), std::string(what_for));
  return {std::move(storage), data, bytes};
}

void CudaContext::copy_in(void* to, const void* host, std::size_t bytes, std::string_view what) {
  // From pageable memory the call returns once the bytes are staged, so the host memory may change after.
  if (bytes)
    CONVEYOR_CUDA(cudaMemcpyAsync(to, host, bytes, cudaMemcpyHostToDevice, stream_.get()), std::string(what));
}

void CudaContext::copy_out(void* host, const void* from, std::size_t bytes, std::string_view what) {
  if (bytes)
    CONVEYOR_CUDA(cudaMemcpyAsync(host, from, bytes, cudaMemcpyDeviceToHost, stream_.get()),
                  std::string(what));
}

void CudaContext::synchronize() const {
  CONVEYOR_CUDA(cudaStreamSynchronize(stream_.get()), "Context::synchronize");
}

std::string CudaContext::describe() const {
  return "cuDNN on GPU " + std::to_string(device()) + " (" + device_name_ + "), " + to_string(dtype()) +
         " NHWC";
}

bool CudaContext::chooses_without_timing(const ConvGeometry& geometry, bool needs_input_grad) const {
  if (deterministic_algorithms_) return true;
  const std::string key = convolution_key(geometry, dtype(), needs_input_grad);
  return conv_algorithms_.count(key) > 0 || (algorithm_cache_ && algorithm_cache_->find(key) != nullptr);
}

std::unique_ptr<Conv2d> CudaContext::make_conv2d(std::string name, const ConvGeometry& geometry,
                                                 bool needs_input_grad) {
  return std::make_unique<Conv2dCudnn>(*this, std::move(name), geometry, needs_input_grad);
}

std::unique_ptr<BatchNorm> CudaContext::make_batch_norm(std::string name, Shape4 shape,
                                                        BatchNormOptions options) {
  return std::make_unique<BatchNormCudnn>(*this, std::move(name), shape, options);
}

std::unique_ptr<Pool2d> CudaContext::make_pool2d(std::string name, PoolGeometry geometry, PoolMode mode) {
  return std::make_unique<Pool2dCudnn>(*this, std::move(name), geometry, mode, false);
}

std::unique_ptr<Pool2d> CudaContext::make_global_average_pool(std::string name, Shape4 input) {
  return std::make_unique<Pool2dCudnn>(*this, std::move(name), PoolGeometry{input, 1, 1, 0},
                                       PoolMode::average, true);
}

std::unique_ptr<Dense> CudaContext::make_dense(std::string name, int batch, int in_features,
                                               int out_features) {
  return std::make_unique<DenseCublas>(*this, std::move(name), batch, in_features, out_features);
}

std::unique_ptr<SoftmaxCrossEntropy> CudaContext::make_loss(std::string name, int batch, int classes) {
  return std::make_unique<SoftmaxCrossEntropyCuda>(*this, std::move(name), batch, classes);
}

std::unique_ptr<Sgd> CudaContext::make_sgd() { return std::make_unique<SgdCuda>(*this); }

void CudaContext::require_workspace(std::size_t bytes) noexcept {
  workspace_needed_ = std::max(workspace_needed_, bytes);
}

void CudaContext::allocate_workspace() {
  release_search_workspace();  // the search is over: its scratch goes back before the workspace is taken
  if (workspace_needed_ <= workspace_.bytes()) return;
  workspace_.reset();
  workspace_ = pool_.allocate(workspace_needed_, stream_.get(), "cuDNN workspace shared by the layers");
}

std::size_t CudaContext::workspace_budget() {
  // Fixed at its first use, so that a warm-up that reuses cached choices judges them against the room a
  // search would have had (with the search's scratch allocated, later measures would differ).
  if (workspace_budget_) return *workspace_budget_;
  std::size_t left = 0;
  if (pool_.limit()) {
    left = pool_.limit() > pool_.in_use() ? pool_.limit() - pool_.in_use() : 0;
  } else {
    std::size_t free_bytes = 0, total_bytes = 0;
    CONVEYOR_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "cuDNN algorithm search");
    left = free_bytes;
  }
  workspace_budget_ = std::min<std::size_t>(left / 2, std::size_t{1} << 30) & ~std::size_t{255};
  return *workspace_budget_;
}

std::pair<void*, std::size_t> CudaContext::search_workspace() {
  if (!search_) search_ = pool_.allocate(workspace_budget(), stream_.get(), "cuDNN algorithm search scratch");
  return {search_.data(), search_.bytes()};
}

void CudaContext::use_algorithm_cache(const std::filesystem::path& folder) {
  algorithm_cache_ = std::make_unique<AlgorithmCache>(folder, environment_);
}

}  // namespace conveyor::nn
