// The CUDA graph that the trainer records its step in: it replays what was recorded, and when work cannot
// be captured it says so and leaves the stream as it was, which is what the trainer's fallback to eager
// launches relies on. Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "src/train/cuda_graph.h"
#include "src/train/layers/cuda_context.h"
#include "src/train/layers/kernels.h"
#include "tests/train/gpu_test_support.h"

namespace conveyor::train {
namespace {

// x = (x + y) / 2 on the context's stream: one of the library's own checked kernel launches.
void average(nn::CudaContext& gpu, float* x, const float* y, std::size_t n) {
  nn::kernels::average_into(n, x, y, gpu.stream(), "test");
}

cudaStreamCaptureStatus capture_status(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  EXPECT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
  return status;
}

TEST(CudaGraph, ReplaysWhatWasRecordedOnEveryLaunch) {
  CONVEYOR_REQUIRE_GPU();
  nn::CudaContext gpu(0, nn::DType::f32);
  const std::vector<float> zeros(64, 0.f), ones(64, 1.f);
  const nn::Buffer x = testing::upload(gpu, zeros, nn::DType::f32),
                   y = testing::upload(gpu, ones, nn::DType::f32);
  CudaGraph graph(
      gpu.stream(), [&] { average(gpu, x.as<float>(), y.as<const float>(), 64); }, "test graph");
  EXPECT_EQ(testing::download(gpu, x, 64, nn::DType::f32), zeros) << "capturing must not run the work";
  EXPECT_GE(graph.nodes(), 1u);
  graph.launch(gpu.stream());
  graph.launch(gpu.stream());
  // 0 -> 0.5 -> 0.75
  EXPECT_EQ(testing::download(gpu, x, 64, nn::DType::f32), std::vector<float>(64, 0.75f));
}

TEST(CudaGraph, WorkThatSynchronisesCannotBeCapturedAndLeavesTheStreamUsable) {
  CONVEYOR_REQUIRE_GPU();
  nn::CudaContext gpu(0, nn::DType::f32);
  const std::vector<float> zeros(64, 0.f), ones(64, 1.f);
  const nn::Buffer x = testing::upload(gpu, zeros, nn::DType::f32),
                   y = testing::upload(gpu, ones, nn::DType::f32);
  const cudaStream_t stream = gpu.stream();
  try {
    CudaGraph graph(
        stream,
        [&] {
          average(gpu, x.as<float>(), y.as<const float>(), 64);
          cudaStreamSynchronize(stream);  // not allowed while capturing: invalidates the capture
        },
        "a step that synchronises");
    FAIL() << "captured a body that synchronises its stream";
  } catch (const DeviceError& e) {
    std::printf("[ message  ] %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("a step that synchronises"), std::string::npos) << e.what();
  }
  EXPECT_EQ(capture_status(stream), cudaStreamCaptureStatusNone);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failed capture left an error for the next call";
  // Eager work on the same stream runs (the trainer's fallback) and nothing recorded ran.
  average(gpu, x.as<float>(), y.as<const float>(), 64);
  EXPECT_EQ(testing::download(gpu, x, 64, nn::DType::f32), std::vector<float>(64, 0.5f));
}

TEST(CudaGraph, AnExceptionWhileRecordingIsRethrownWithTheStreamOutOfCapture) {
  CONVEYOR_REQUIRE_GPU();
  nn::CudaContext gpu(0, nn::DType::f32);
  const std::vector<float> ones(8, 1.f);
  const nn::Buffer x = testing::upload(gpu, ones, nn::DType::f32);
  EXPECT_THROW(CudaGraph(
                   gpu.stream(),
                   [&] {
                     average(gpu, x.as<float>(), x.as<const float>(), 8);
                     throw std::runtime_error("a layer refused");
                   },
                   "test graph"),
               std::runtime_error);
  EXPECT_EQ(capture_status(gpu.stream()), cudaStreamCaptureStatusNone);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  gpu.synchronize();
}

}  // namespace
}  // namespace conveyor::train
