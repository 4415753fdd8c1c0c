// The GPU backend: a Context on one device, with its memory pool, stream, cuDNN and cuBLAS handles, the
// workspace the layers share, the convolution algorithms chosen at warm-up (per shape in memory, and
// optionally on disk across processes), and the cuDNN/cuBLAS/CUDA twins of every layer. Also the RAII
// owners of cuDNN descriptors. Only the CUDA-only sources include this header.
//
// cuDNN 9 marks the legacy (non-graph) API used here as deprecated. It still ships in libcudnn_ops /
// libcudnn_cnn, is far simpler than the graph API for a fixed set of layers, and its deprecation
// warnings appear only when CUDNN_WARN_DEPRECATED is defined, which this project does not do.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "src/device/cuda_handles.h"
#include "src/device/device_memory.h"
#include "src/train/layers/algorithm_cache.h"
#include "src/train/layers/context.h"
#include "src/train/layers/cudnn_check.h"
#include "src/train/layers/elementwise_cuda.h"
#include "src/train/layers/tensor.h"

namespace conveyor::nn {

// RAII owner of one cuDNN descriptor.
template <class Handle, cudnnStatus_t (*Create)(Handle*), cudnnStatus_t (*Destroy)(Handle)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { CONVEYOR_CUDNN(Create(&handle_), "creating a cuDNN descriptor"); }
  ~CudnnDescriptor() {
    if (handle_) Destroy(handle_);
  }
  CudnnDescriptor(CudnnDescriptor&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Handle get() const noexcept { return handle_; }

 private:
  Handle handle_ = nullptr;
};

using TensorDescriptor =
    CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor = CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                              cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor =
    CudnnDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;
using ActivationDescriptor = CudnnDescriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                                             cudnnDestroyActivationDescriptor>;

cudnnDataType_t cudnn_type(DType type) noexcept;
cudaDataType_t cublas_type(DType type) noexcept;
// A fully packed NHWC descriptor of `shape`.
TensorDescriptor make_nhwc_descriptor(const Shape4& shape, DType type, const std::string& layer);

// The algorithms one convolution shape runs with, chosen once by timing (cudnnFind*Ex), by cuDNN's
// heuristics (deterministic), or taken from the algorithm cache on disk after cuDNN accepted them again.
struct ConvAlgorithms {
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backward_data{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter{};
  cudnnMathType_t forward_math{}, backward_data_math{}, backward_filter_math{};
  std::size_t forward_bytes = 0, backward_data_bytes = 0, backward_filter_bytes = 0;
  float forward_ms = 0, backward_data_ms = 0, backward_filter_ms = 0;  // negative: not timed (heuristics)
  bool has_backward_data = false;
  bool from_disk = false;  // reused from the algorithm cache file
};

class CudaContext final : public Context {
 public:
  // GPU `device` with activations and filters in `dtype`; memory_limit_bytes 0 means no limit but the card.
  // deterministic: convolution algorithms by cuDNN's heuristics, deterministic ones only
  // (TrainerOptions::deterministic), instead of timed.
  // urgent_stream: the stream at the device's most urgent priority (TrainerOptions::urgent_stream).
  CudaContext(int device, DType dtype, std::size_t memory_limit_bytes = 0, bool deterministic = false,
              bool urgent_stream = false);
  ~CudaContext() override;

  // ---- Context ----
  Buffer allocate(std::size_t bytes, std::string_view what_for) override;
  void copy_in(void* to, const void* host, std::size_t bytes, std::string_view what) override;
  void copy_out(void* host, const void* from, std::size_t bytes, std::string_view what) override;
  void allocate_workspace() override;
  void synchronize() const override;
  std::string describe() const override;
  bool has_first_call_costs() const noexcept override { return true; }
  void use_algorithm_cache(const std::filesystem::path& folder) override;
  AlgorithmCache* algorithm_cache() noexcept override { return algorithm_cache_.get(); }
  bool chooses_without_timing(const ConvGeometry& geometry, bool needs_input_grad) const override;
  std::unique_ptr<Conv2d> make_conv2d(std::string name, const ConvGeometry& geometry,
                                      bool needs_input_grad) override;
  std::unique_ptr<BatchNorm> make_batch_norm(std::string name, Shape4 shape,
                                             BatchNormOptions options) override;
  std::unique_ptr<Pool2d> make_pool2d(std::string name, PoolGeometry geometry, PoolMode mode) override;
  std::unique_ptr<Pool2d> make_global_average_pool(std::string name, Shape4 input) override;
  std::unique_ptr<Dense> make_dense(std::string name, int batch, int in_features, int out_features) override;
  std::unique_ptr<SoftmaxCrossEntropy> make_loss(std::string name, int batch, int classes) override;
  std::unique_ptr<Sgd> make_sgd() override;
  const Elementwise& elementwise() const noexcept override { return elementwise_; }

  // ---- what the GPU layers use ----
  const std::string& device_name() const noexcept { return device_name_; }
  cuda::DeviceMemoryPool& pool() noexcept { return pool_; }
  cudaStream_t stream() const noexcept { return stream_.get(); }
  cudnnHandle_t cudnn() const noexcept { return cudnn_; }
  cublasHandle_t cublas() const noexcept { return cublas_; }

  // The workspace every layer shares: they run one after another on one stream, so the largest need is
  // enough. require_workspace() during preparation, allocate_workspace() once after.
  void require_workspace(std::size_t bytes) noexcept;
  void* workspace() const noexcept { return workspace_.data(); }
  std::size_t workspace_bytes() const noexcept { return workspace_.bytes(); }

  // The most workspace one algorithm may take: up to 1 GiB, at most half of what the limit or the card
  // has left when it is first asked for.
  std::size_t workspace_budget();
  // Scratch of workspace_budget() bytes for cudnnFind*Ex while it times candidate algorithms (algorithms
  // needing more are skipped). Freed by release_search_workspace().
  std::pair<void*, std::size_t> search_workspace();
  void release_search_workspace() noexcept { search_.reset(); }

  // Algorithms per convolution shape: ResNet-18's repeated shapes are searched once.
  std::map<std::string, ConvAlgorithms>& conv_algorithms() noexcept { return conv_algorithms_; }
  // true: layers take cuDNN's heuristic choice among deterministic algorithms instead of timing them.
  bool deterministic_algorithms() const noexcept { return deterministic_algorithms_; }

  // GPU, driver, CUDA runtime and cuDNN: what an algorithm choice is valid for.
  const AlgorithmEnvironment& environment() const noexcept { return environment_; }
  const AlgorithmCache* algorithm_cache() const noexcept { return algorithm_cache_.get(); }

 private:
  std::string device_name_;
  cuda::DeviceMemoryPool pool_;  // first: destroyed after every buffer below
  cuda::Stream stream_;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cuda::DeviceBuffer cublas_workspace_;
  cuda::DeviceBuffer workspace_;
  cuda::DeviceBuffer search_;
  std::size_t workspace_needed_ = 0;
  std::optional<std::size_t> workspace_budget_;
  std::map<std::string, ConvAlgorithms> conv_algorithms_;
  bool deterministic_algorithms_ = false;
  AlgorithmEnvironment environment_;
  std::unique_ptr<AlgorithmCache> algorithm_cache_;
  ElementwiseCuda elementwise_;
};

}  // namespace conveyor::nn
