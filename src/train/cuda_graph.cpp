#include "src/train/cuda_graph.h"

#include <utility>

#include "conveyor/error.h"
#include "src/device/cuda_check.h"

namespace conveyor::train {
namespace {

// Ends a capture that went wrong, drops what it recorded and clears the error the failed call left, so
// that the next kernel launch's cudaGetLastError() check does not report it as its own.
void abandon_capture(cudaStream_t stream) noexcept {
  cudaGraph_t partial = nullptr;
  cudaStreamEndCapture(stream, &partial);
  if (partial) cudaGraphDestroy(partial);
  cudaGetLastError();
}

}  // namespace

CudaGraph::CudaGraph(cudaStream_t stream, const std::function<void()>& body, std::string what)
    : what_(std::move(what)) {
  // Relaxed: cuDNN and cuBLAS may make harmless runtime calls (attribute queries) while being captured.
  CONVEYOR_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), "capturing " + what_);
  try {
    body();
  } catch (...) {
    abandon_capture(stream);
    throw;
  }
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph_);
  if (ended != cudaSuccess) {
    if (graph_) cudaGraphDestroy(graph_);
    graph_ = nullptr;
    cudaGetLastError();
    cuda::throw_cuda_error(ended, "cudaStreamEndCapture", "capturing " + what_, __FILE__, __LINE__);
  }
  const cudaError_t made = cudaGraphInstantiate(&exec_, graph_, 0);
  if (made != cudaSuccess) {
    cudaGraphDestroy(graph_);
    graph_ = nullptr;
    exec_ = nullptr;
    cudaGetLastError();
    cuda::throw_cuda_error(made, "cudaGraphInstantiate", "instantiating " + what_, __FILE__, __LINE__);
  }
}

CudaGraph::~CudaGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void CudaGraph::launch(cudaStream_t stream) const {
  CONVEYOR_CUDA(cudaGraphLaunch(exec_, stream), "replaying " + what_);
}

std::size_t CudaGraph::nodes() const {
  std::size_t count = 0;
  CONVEYOR_CUDA(cudaGraphGetNodes(graph_, nullptr, &count), "counting the nodes of " + what_);
  return count;
}

}  // namespace conveyor::train
