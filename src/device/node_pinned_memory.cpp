#include "src/device/node_pinned_memory.h"

#include <cuda_runtime.h>
#include <numa.h>

#include "conveyor/error.h"
#include "src/device/cuda_check.h"

namespace conveyor::cuda {
namespace {

class NodePinnedMemory final : public HostMemoryResource {
 public:
  explicit NodePinnedMemory(int node) : node_(node) {}

  void* allocate(std::size_t bytes) override {
    // Page-aligned (an mmap), more than the 64 bytes the interface promises.
    void* memory = numa_alloc_onnode(bytes, node_);
    if (memory == nullptr)
      throw DeviceError("batch pool: numa_alloc_onnode found no " + std::to_string(bytes) +
                        " bytes for a batch buffer on NUMA node " + std::to_string(node_));
    const cudaError_t status = cudaHostRegister(memory, bytes, cudaHostRegisterPortable);
    if (status != cudaSuccess) {
      numa_free(memory, bytes);
      CONVEYOR_CUDA(status, "batch pool: page-locking a batch buffer on NUMA node " + std::to_string(node_));
    }
    return memory;
  }
  void deallocate(void* memory, std::size_t bytes) noexcept override {
    cudaHostUnregister(memory);  // cannot report from here; it was registered by allocate()
    numa_free(memory, bytes);
  }
  bool page_locked() const noexcept override { return true; }

 private:
  const int node_;
};

}  // namespace

std::shared_ptr<HostMemoryResource> node_pinned_memory(int node, std::string& why) {
  if (numa_available() < 0) {
    why = "libnuma: NUMA is not available to this process";
    return nullptr;
  }
  if (node < 0 || node > numa_max_node()) {
    why = "no NUMA node " + std::to_string(node) + " (the host has 0-" + std::to_string(numa_max_node()) + ")";
    return nullptr;
  }
  return std::make_shared<NodePinnedMemory>(node);
}

int host_numa_nodes() { return numa_available() < 0 ? 0 : numa_num_configured_nodes(); }

int page_node(const void* address) {
  if (numa_available() < 0) return -1;
  void* pages[1] = {const_cast<void*>(address)};
  int status[1] = {-1};
  // With no target nodes, move_pages reports where each page is instead of moving it.
  if (numa_move_pages(0, 1, pages, nullptr, status, 0) != 0) return -1;
  return status[0];
}

}  // namespace conveyor::cuda
