#include "tests/train/gpu_test_support.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "conveyor/random.h"
#include "src/core/float16.h"

namespace conveyor::testing {

bool gpu_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::unique_ptr<nn::Context> gpu_context(nn::DType type, int device) {
  return train::make_backend({.device = device, .dtype = type}).context;
}

nn::CudaContext& cuda_of(nn::Context& ctx) {
  auto* cuda = dynamic_cast<nn::CudaContext*>(&ctx);
  if (cuda == nullptr) throw std::logic_error("not a GPU context: " + ctx.describe());
  return *cuda;
}

std::vector<float> quantize(const std::vector<float>& values, nn::DType type) {
  std::vector<float> out(values);
  for (float& v : out) {
    if (type == nn::DType::bf16) v = nn::bfloat16_to_float(nn::float_to_bfloat16(v));
    if (type == nn::DType::f16) v = nn::half_to_float(nn::float_to_half(v));
  }
  return out;
}

nn::Buffer upload(nn::Context& ctx, const std::vector<float>& values, nn::DType type,
                  const std::string& name) {
  nn::Buffer buffer = ctx.allocate(values.size() * nn::element_size(type), name);
  ctx.synchronize();  // the allocation and its zero fill are ordered on the context's stream, not this copy's
  std::vector<std::uint16_t> half(values.size());
  const void* src = values.data();
  if (type != nn::DType::f32) {
    for (std::size_t i = 0; i < values.size(); ++i)
      half[i] = type == nn::DType::bf16 ? nn::float_to_bfloat16(values[i]) : nn::float_to_half(values[i]);
    src = half.data();
  }
  if (cudaMemcpy(buffer.data(), src, buffer.bytes(), cudaMemcpyHostToDevice) != cudaSuccess)
    ADD_FAILURE() << "upload";
  return buffer;
}

std::vector<float> download(nn::Context& ctx, const void* data, std::size_t count, nn::DType type) {
  ctx.synchronize();
  std::vector<float> out(count);
  if (type == nn::DType::f32) {
    if (cudaMemcpy(out.data(), data, count * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
      ADD_FAILURE() << "download";
    return out;
  }
  std::vector<std::uint16_t> raw(count);
  if (cudaMemcpy(raw.data(), data, count * 2, cudaMemcpyDeviceToHost) != cudaSuccess)
    ADD_FAILURE() << "download";
  for (std::size_t i = 0; i < count; ++i)
    out[i] = type == nn::DType::bf16 ? nn::bfloat16_to_float(raw[i]) : nn::half_to_float(raw[i]);
  return out;
}

std::vector<float> download(nn::Context& ctx, const nn::Buffer& buffer, std::size_t count, nn::DType type) {
  return download(ctx, buffer.data(), count, type);
}

double relative_error(const std::vector<float>& actual, const std::vector<float>& expected) {
  if (actual.size() != expected.size()) return INFINITY;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double d = static_cast<double>(actual[i]) - expected[i];
    diff += d * d;
    norm += static_cast<double>(expected[i]) * expected[i];
  }
  if (!std::isfinite(diff)) return INFINITY;
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

::testing::AssertionResult within(const std::string& what, double error, double tolerance) {
  std::printf("[ compare  ] %-58s relative error %.2e (tolerance %.0e)%s\n", what.c_str(), error, tolerance,
              error <= tolerance ? "" : "  <-- FAIL");
  std::fflush(stdout);
  if (error <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": relative error " << error << " > " << tolerance;
}

std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  std::vector<float> v(count);
  for (float& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

}  // namespace conveyor::testing
