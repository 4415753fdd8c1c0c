// A piece of stream work recorded once and replayed with one launch: a CUDA graph and its executable,
// owned together. The trainer records its step and its evaluation forward pass at warm-up, when every
// buffer already exists at its final address (a graph replays the addresses it recorded).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>

namespace conveyor::train {

class CudaGraph {
 public:
  // Records what `body` enqueues on `stream` (nothing runs) and instantiates it. Throws DeviceError,
  // naming `what`, when the work cannot be captured (a call in `body` that synchronises, for one) or
  // rethrows what `body` threw; either way the stream has left capture mode and takes ordinary work
  // again, and no error is left pending for the next CUDA call to report.
  CudaGraph(cudaStream_t stream, const std::function<void()>& body, std::string what);
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Enqueues one replay on `stream`.
  void launch(cudaStream_t stream) const;
  // Kernels, copies and other operations recorded.
  std::size_t nodes() const;
  const std::string& what() const noexcept { return what_; }

 private:
  std::string what_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace conveyor::train
