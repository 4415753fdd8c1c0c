// Where the training wing picks its backend, once: the CPU reference or CUDA (cuDNN, cuBLAS and our
// kernels), as the device wing picks its feeder's (src/device/feeder_backend.h). CMake compiles the CUDA
// twins only where CUDA is built (src/train/CMakeLists.txt and layers/); backend.cpp is the one file of the
// training wing that asks whether it was, and everything above the factory below (the network, the
// parameters, the trainer, data-parallel training) is the same code for both backends.
#pragma once

#include <cstddef>
#include <memory>

#include "conveyor/cuda/device.h"
#include "src/train/layers/context.h"
#include "src/train/step_backend.h"

namespace conveyor::train {

struct BackendOptions {
  int device = -1;                     // CUDA device index; -1: the CPU reference
  nn::DType dtype = nn::DType::bf16;   // GPU: activations and filters (the CPU reference computes in fp32)
  std::size_t memory_limit_bytes = 0;  // GPU: device memory cap (0: none, or memory_fraction)
  double memory_fraction = 0;          // GPU: the cap as a fraction of the card, when the bytes are 0
  bool deterministic = false;          // GPU: convolution algorithms by cuDNN's deterministic heuristics
  bool urgent_stream = false;          // GPU: the context's stream at the device's most urgent priority
};

// A backend's two halves: the context (layers, memory) and the training step's side of it.
struct Backend {
  std::unique_ptr<nn::Context> context;
  std::unique_ptr<StepBackend> steps;
};

// The CPU reference for device -1, else the GPU `device`. Throws InvalidArgument when that GPU is not
// there or conveyor was built without CUDA.
Backend make_backend(const BackendOptions& options);

// Makes `device` current for the scope and restores the caller's device afterwards; nothing for -1 (the
// CPU).
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

// The backend's libraries added to `versions` (cuDNN and cuBLAS with CUDA; nothing for the CPU).
void add_backend_library_versions(LibraryVersions& versions);

}  // namespace conveyor::train
