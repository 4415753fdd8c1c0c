// Where layers run: the interface of a backend. Its two implementations are the CPU reference (float32 on
// oneTBB, cpu_context.h) and one GPU (cuDNN and cuBLAS on one stream, all memory from one DeviceMemoryPool,
// cuda_context.h); src/train/backend.h picks one, once, when a trainer warms up. A context makes the layers
// of its backend, owns the memory they use and says what its backend needs (first-call costs, algorithm
// choice); code above it (the network, the parameters, the trainer) is the same for both.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "conveyor/train/nn/shape.h"
#include "src/train/layers/batch_norm.h"
#include "src/train/layers/buffer.h"
#include "src/train/layers/conv2d.h"
#include "src/train/layers/dense.h"
#include "src/train/layers/elementwise.h"
#include "src/train/layers/loss.h"
#include "src/train/layers/pooling.h"
#include "src/train/layers/sgd.h"
#include "src/train/layers/tensor.h"

namespace conveyor::nn {

class AlgorithmCache;

class Context {
 public:
  virtual ~Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // The storage type of activations and filters (float32 on the CPU reference).
  DType dtype() const noexcept { return dtype_; }
  // The CUDA device, or -1 for the CPU.
  int device() const noexcept { return device_; }

  // ---- memory ----
  // Zero-filled memory; `what_for` names the layer and tensor in the DeviceMemoryError a limit gives.
  virtual Buffer allocate(std::size_t bytes, std::string_view what_for) = 0;
  // bytes from host memory into the context's memory, in the context's order (the host memory may change
  // as soon as the call returns).
  virtual void copy_in(void* to, const void* host, std::size_t bytes, std::string_view what) = 0;
  // bytes from the context's memory to host memory, in the context's order: complete after synchronize().
  virtual void copy_out(void* host, const void* from, std::size_t bytes, std::string_view what) = 0;
  // After every layer is prepared: allocates the workspace they share (the largest any of them needs).
  virtual void allocate_workspace() = 0;
  // Blocks until all work queued on the context is done (nothing to wait for on the CPU).
  virtual void synchronize() const = 0;

  // "CPU reference, 16 threads, fp32 NHWC" or "cuDNN on GPU 0 (NVIDIA H200), bf16 NHWC".
  virtual std::string describe() const = 0;
  // Whether the first call of each kind of work costs far more than later ones (a GPU's libraries load
  // their kernels then): warm-up then runs each kind once before anything is timed or captured.
  virtual bool has_first_call_costs() const noexcept = 0;

  // ---- how convolutions are chosen ----
  // Timed convolution algorithms are read from and written to the cache of this device in `folder` (set
  // before the layers are prepared; nothing to choose on the CPU). algorithm_cache() is null when none is in
  // use.
  virtual void use_algorithm_cache(const std::filesystem::path& folder) = 0;
  virtual AlgorithmCache* algorithm_cache() noexcept = 0;
  // Whether preparing a convolution of this shape times nothing on the device: on the CPU, with
  // deterministic (heuristic) algorithms, or when its algorithms are known already (in memory, or an entry
  // of the algorithm cache on disk, which prepare() still checks).
  virtual bool chooses_without_timing(const ConvGeometry& geometry, bool needs_input_grad) const = 0;

  // ---- the layers of this backend ----
  virtual std::unique_ptr<Conv2d> make_conv2d(std::string name, const ConvGeometry& geometry,
                                              bool needs_input_grad) = 0;
  virtual std::unique_ptr<BatchNorm> make_batch_norm(std::string name, Shape4 shape,
                                                     BatchNormOptions options) = 0;
  virtual std::unique_ptr<Pool2d> make_pool2d(std::string name, PoolGeometry geometry, PoolMode mode) = 0;
  // Average over all of h x w: n x h x w x c to n x 1 x 1 x c.
  virtual std::unique_ptr<Pool2d> make_global_average_pool(std::string name, Shape4 input) = 0;
  virtual std::unique_ptr<Dense> make_dense(std::string name, int batch, int in_features,
                                            int out_features) = 0;
  virtual std::unique_ptr<SoftmaxCrossEntropy> make_loss(std::string name, int batch, int classes) = 0;
  virtual std::unique_ptr<Sgd> make_sgd() = 0;
  virtual const Elementwise& elementwise() const noexcept = 0;

 protected:
  Context(DType dtype, int device) noexcept : dtype_(dtype), device_(device) {}

 private:
  DType dtype_;
  int device_;
};

}  // namespace conveyor::nn
