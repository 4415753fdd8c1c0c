// Page-locked host memory on one NUMA node: each block is mapped by libnuma bound to the node
// (numa_alloc_onnode), then page-locked for CUDA (cudaHostRegister, portable). On a host of several NUMA
// nodes a GPU copies from its own node's memory without crossing the link between the sockets, and the
// pipeline's threads there (host_locality.h) write it without crossing it either.
//
// Why not cudaHostAlloc on a thread of that node: where the driver takes the pages from is its business;
// the binding here is the kernel's, and page_node() checks it. Freeing (cudaHostUnregister) waits for the
// device like cudaFreeHost: a PinnedBlockCache over it keeps its blocks until it dies.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "conveyor/host_memory.h"

namespace conveyor::cuda {

// The node-bound memory for `node`, or null with `why` set where that cannot be had here: libnuma says NUMA
// is unavailable to this process, or the node does not exist.
std::shared_ptr<HostMemoryResource> node_pinned_memory(int node, std::string& why);

// The NUMA nodes of this host as libnuma sees them; 0 when it says NUMA is unavailable to this process.
int host_numa_nodes();

// The NUMA node the page at `address` lies on (it must have been touched), or -1 with libnuma unavailable.
int page_node(const void* address);

}  // namespace conveyor::cuda
