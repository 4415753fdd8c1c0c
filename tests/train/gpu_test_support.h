// Helpers for the GPU tests: skip without a device, move float data to and from a GPU context in any
// storage type, and compare with the CPU reference by norm-wise relative error, printing each figure.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "src/train/backend.h"
#include "src/train/layers/context.h"
#include "src/train/layers/cuda_context.h"

namespace conveyor::testing {

// True when the CUDA runtime sees at least one device.
bool gpu_available();

#define CONVEYOR_REQUIRE_GPU() \
  if (!::conveyor::testing::gpu_available()) GTEST_SKIP() << "no CUDA device visible"

// Values as the GPU stores them: rounded to `type` (and back to float).
std::vector<float> quantize(const std::vector<float>& values, nn::DType type);
// A buffer on `ctx` holding `values` in `type`.
nn::Buffer upload(nn::Context& ctx, const std::vector<float>& values, nn::DType type,
                  const std::string& name = "test");
// `count` values of `type` read back as floats (synchronises).
std::vector<float> download(nn::Context& ctx, const void* data, std::size_t count, nn::DType type);
std::vector<float> download(nn::Context& ctx, const nn::Buffer& buffer, std::size_t count, nn::DType type);

// ||actual - expected||_2 / ||expected||_2 (or the absolute norm when expected is all zeros).
double relative_error(const std::vector<float>& actual, const std::vector<float>& expected);

// Prints "[ compare ] what: relative error E (tolerance T)" and returns whether E <= T.
::testing::AssertionResult within(const std::string& what, double error, double tolerance);

std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float lo = -1.f, float hi = 1.f);

// The GPU backend's context on `device` in `type`, as the trainer makes it (src/train/backend.h).
std::unique_ptr<nn::Context> gpu_context(nn::DType type, int device = 0);
// The CUDA side of a GPU context (its stream, handles).
nn::CudaContext& cuda_of(nn::Context& ctx);

// Base of the GPU tests run once per storage type: a context on GPU 0 working in that type; skipped
// without a GPU.
class GpuTypedTest : public ::testing::TestWithParam<nn::DType> {
 protected:
  void SetUp() override {
    CONVEYOR_REQUIRE_GPU();
    gpu = gpu_context(GetParam());
  }
  nn::DType type() const { return GetParam(); }
  // "what [bf16]": names a comparison with the type it ran in.
  std::string tag(const std::string& what) const { return what + " [" + nn::to_string(type()) + "]"; }
  std::unique_ptr<nn::Context> gpu;
};

}  // namespace conveyor::testing
