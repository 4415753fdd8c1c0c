// A feeder on a host of several GPUs (FeederOptions::host, issue 41): its pipeline on the rank's share of the
// CPUs close to its GPU, its page-locked batches on the GPU's NUMA node. Lines starting "[ host     ]" say
// what this host is. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/host_locality.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "src/device/node_pinned_memory.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

#define REQUIRE_GPU() \
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason()

TEST(HostPlacement, NodeBoundBatchMemoryIsPageLockedAndOnItsNode) {
  REQUIRE_GPU();
  const testing::Watchdog watchdog(60s, "NodeBoundBatchMemoryIsPageLockedAndOnItsNode");
  const GpuLocality locality = gpu_locality(0);
  std::cout << "[ host     ] gpu:0 " << locality.pci_bus_id << ": NUMA node " << locality.numa_node << " of "
            << cuda::host_numa_nodes() << ", " << locality.cpus.size() << " CPUs close to it"
            << (locality.unknown.empty() ? "" : " (" + locality.unknown + ")") << "\n";
  std::string why;
  // Node 0 exists on every host libnuma works on; the GPU's own node where it is known.
  const int node = locality.numa_node >= 0 ? locality.numa_node : 0;
  const std::shared_ptr<HostMemoryResource> memory = cuda::node_pinned_memory(node, why);
  if (!memory) GTEST_SKIP() << why;
  constexpr std::size_t kBytes = std::size_t{8} << 20;
  void* block = memory->allocate(kBytes);
  std::memset(block, 7, kBytes);
  EXPECT_EQ(cuda::page_node(block), node);
  EXPECT_EQ(cuda::page_node(static_cast<char*>(block) + kBytes - 1), node);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, block), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << "not page-locked for CUDA";
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, kBytes), cudaSuccess);
  std::vector<char> back(kBytes);
  EXPECT_EQ(cudaMemcpy(device, block, kBytes, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(back.data(), device, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back[kBytes / 2], 7);
  cudaFree(device);
  memory->deallocate(block, kBytes);
}

TEST(HostPlacement, OneRankOfSeveralRunsItsPipelineOnItsShareOfTheCpusCloseToItsGpu) {
  REQUIRE_GPU();
  const testing::Watchdog watchdog(120s, "OneRankOfSeveralRunsItsPipelineOnItsShareOfTheCpusCloseToItsGpu");
  Ranks ranks;
  ranks.world_size = ranks.local_world_size = 2;
  FeederOptions options;
  options.host.ranks = ranks;
  DeviceFeeder feeder(resolve(DeviceSpec::parse("gpu:0")), options);
  std::vector<std::vector<std::uint8_t>> files;
  for (int i = 0; i < 32; ++i) files.push_back(testing::make_jpeg(120, 160, 3, 300 + static_cast<std::uint64_t>(i)));
  const BatchedDataset dataset =
      Dataset::memory(files).map(ops::decode_random_resized_crop(64)).batch(8, ImageShape{64, 64, 3});
  std::size_t batches = 0;
  PipelineStats pipeline;
  {
    auto it = feeder.feed(dataset);
    while (it.next()) ++batches;
    pipeline = it.stats();
  }
  feeder.synchronize();
  const FeederStats stats = feeder.stats();
  const HostCpus expected = cpus_near_gpu(ranks, 0);
  std::cout << "[ host     ] rank 0 of 2: CPUs";
  for (const int cpu : stats.pipeline_cpus) std::cout << " " << cpu;
  std::cout << " (" << stats.pipeline_cpus_reason << ")\n[ host     ] batches: " << stats.host_memory << "\n";
  EXPECT_EQ(batches, 4u);
  ASSERT_FALSE(stats.pipeline_cpus.empty());
  EXPECT_EQ(stats.pipeline_cpus, expected.cpus);
  EXPECT_EQ(pipeline.threads, static_cast<int>(stats.pipeline_cpus.size())) << "one thread per CPU given";
  EXPECT_FALSE(stats.host_memory.empty());
  // A single process keeps every CPU.
  FeederOptions alone;
  DeviceFeeder single(resolve(DeviceSpec::parse("gpu:0")), alone);
  {
    auto it = single.feed(dataset);
    while (it.next()) {
    }
  }
  EXPECT_TRUE(single.stats().pipeline_cpus.empty()) << single.stats().pipeline_cpus_reason;
}

}  // namespace
}  // namespace conveyor
