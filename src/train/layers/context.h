// Where layers run: the CPU reference (float32, oneTBB) or one GPU (cuDNN and cuBLAS on one stream, all
// memory from one DeviceMemoryPool). Layers take a Context and branch on on_gpu(); the GPU state lives in
// CudaContext (src/train/layers/cuda_context.h) so that this header needs neither cuDNN nor cuBLAS.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/train/layers/tensor.h"

#ifdef CONVEYOR_HAVE_CUDA
#include <cuda_runtime.h>

#include "src/device/device_memory.h"
#endif

namespace conveyor::nn {

class CudaContext;
class AlgorithmCache;

// Zero-filled memory owned by a layer or a model: host memory on a CPU context, device memory from the
// context's pool on a GPU context.
class Buffer {
 public:
  Buffer() = default;
  void* data() const noexcept;
  std::size_t bytes() const noexcept { return bytes_; }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data());
  }
  // A view of the first shape.count() elements of `type`; throws InvalidArgument when they do not fit.
  Tensor tensor(Shape4 shape, DType type) const;

 private:
  friend class Context;
  std::vector<double> host_;  // double: 8-byte alignment for every element type used
  std::size_t bytes_ = 0;
#ifdef CONVEYOR_HAVE_CUDA
  cuda::DeviceBuffer device_;
#endif
};

class Context {
 public:
  // The CPU reference; every tensor is float32.
  Context();
#ifdef CONVEYOR_HAVE_CUDA
  // GPU `device` with activations and filters in `dtype`; memory_limit_bytes 0 means no limit but the card.
  Context(int device, DType dtype, std::size_t memory_limit_bytes = 0);
  CudaContext& cuda() const;
  cudaStream_t stream() const;
  // Convolution algorithms by cuDNN's heuristics, deterministic ones only (TrainerOptions::deterministic);
  // set before the layers are prepared.
  void set_deterministic_algorithms(bool on);
  // Timed convolution algorithms are read from and written to the cache of this GPU in `folder`
  // (set before the layers are prepared). algorithm_cache() is null when none is in use.
  void use_algorithm_cache(const std::filesystem::path& folder);
  AlgorithmCache* algorithm_cache() const;
#endif
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  bool on_gpu() const noexcept { return cuda_ != nullptr; }
  DType dtype() const noexcept { return dtype_; }
  int device() const noexcept { return device_; }

  // Zero-filled memory; `what_for` names the layer and tensor in the DeviceMemoryError a limit gives.
  Buffer allocate(std::size_t bytes, std::string_view what_for);
  // After every layer is prepared: allocates the workspace they share (the largest any of them needs).
  void allocate_workspace();
  // Blocks until all work queued on the context's stream is done (nothing to do on the CPU).
  void synchronize() const;
  // "CPU reference, 16 threads" or "GPU 0 (NVIDIA H200), bf16 NHWC".
  std::string describe() const;

 private:
  DType dtype_ = DType::f32;
  int device_ = -1;
  std::unique_ptr<CudaContext> cuda_;
};

}  // namespace conveyor::nn
