// Page-locked host memory made for one GPU, on threads that never chose a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/cuda/device.h"
#include "conveyor/cuda/pinned_memory.h"
#include "src/device/device_bound_memory.h"
#include "tests/support/subprocess.h"

namespace conveyor::cuda {
namespace {

constexpr const char* kChildVariable = "CONVEYOR_TEST_BOUND_MEMORY_CHILD";

// The child of the next test, in a process of its own that holds no context yet: a block made and freed on
// a fresh thread for the last GPU leaves this process holding a context on that GPU alone.
TEST(DeviceBoundMemoryChild, BlocksForTheLastGpuMakeNoContextOnGpu0) {
  if (std::getenv(kChildVariable) == nullptr)
    GTEST_SKIP() << "run by DeviceBoundMemory.AThreadThatChoseNoDeviceUsesTheGpuTheMemoryIsFor";
  int count = 0;  // (list_gpus() would read each GPU's free memory: a context on each)
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  const int gpu = count - 1;
  ASSERT_GE(gpu, 1);
  ASSERT_EQ(gpus_in_use(), std::vector<int>{}) << "a context before the test began";
  const auto memory = with_device(pinned_host_memory(), gpu);
  std::thread worker([&] {  // a pipeline worker: device 0 is current on it until someone chooses
    void* block = memory->allocate(1 << 20);
    static_cast<char*>(block)[0] = 1;
    memory->deallocate(block, 1 << 20);
  });
  worker.join();
  EXPECT_TRUE(memory->page_locked());
  EXPECT_EQ(gpus_in_use(), std::vector<int>{gpu});
}

TEST(DeviceBoundMemory, AThreadThatChoseNoDeviceUsesTheGpuTheMemoryIsFor) {
  if (list_gpus().size() < 2) GTEST_SKIP() << "needs two GPUs (one is visible or none)";
  const testing::ProcessResult child =
      testing::run_process({"/proc/self/exe", "--gtest_filter=DeviceBoundMemoryChild.*"},
                           {std::string(kChildVariable).append("=1")}, std::chrono::seconds(120));
  EXPECT_EQ(child.exit_code, 0) << child.out << child.err;
  EXPECT_NE(child.out.find("[  PASSED  ] 1 test"), std::string::npos) << child.out;
}

}  // namespace
}  // namespace conveyor::cuda
