// Where the training wing picks its backend, once: the CPU reference or CUDA (cuDNN, cuBLAS and our
// kernels), as the device wing picks its feeder's (src/device/feeder_backend.h), and with it the engine of
// data-parallel training's collectives (Open MPI on the CPU, NCCL on a GPU). CMake compiles the CUDA twins
// only where CUDA is built (src/train/CMakeLists.txt, layers/ and distributed/); backend.cpp is the one file
// of the training wing that asks whether it was, and everything above the factories below (the network,
// the parameters, the trainer, data-parallel training) is the same code for both backends.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "conveyor/cuda/device.h"
#include "conveyor/ranks.h"
#include "src/train/distributed/communicator.h"
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

struct CommunicatorOptions {
  std::chrono::milliseconds connect_timeout{std::chrono::minutes(2)};     // the ranks meeting
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(1)};  // a collective without progress
  std::chrono::milliseconds abort_grace{std::chrono::seconds(10)};       // DataParallelOptions::abort_grace
};

// The communicator of rank ranks.rank for a trainer on `device`: NCCL on a GPU; on the CPU (-1) Open MPI,
// or, for a process that is the whole job and that no MPI launcher started, the single rank's (no engine at
// all). Meets the other ranks. Throws InvalidArgument for CPU processes without an MPI launcher, a GPU
// without CUDA, or ranks the engine's own world contradicts; CollectiveError when they do not meet in time.
std::unique_ptr<Communicator> make_communicator(const Ranks& ranks, int device,
                                                const CommunicatorOptions& options);

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
