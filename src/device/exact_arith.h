// Floating-point arithmetic that host and device code share and that must give the same bits on both.
// nvcc fuses a * b + c into one fused multiply-add by default, and GCC does too when the target has FMA
// (-ffp-contract=fast, the GNU default); either changes the rounding. The device forms use the _rn
// intrinsics, which are never fused; host files that include this header are compiled with
// -ffp-contract=off (see their CMakeLists.txt), as the CPU colour kernels are.
#pragma once

#if defined(__CUDACC__)
#define CONVEYOR_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define CONVEYOR_HOST_DEVICE inline
#endif

namespace conveyor::cuda::exact {

CONVEYOR_HOST_DEVICE float mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

CONVEYOR_HOST_DEVICE float add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

CONVEYOR_HOST_DEVICE float sub(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

CONVEYOR_HOST_DEVICE double mul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

CONVEYOR_HOST_DEVICE double add(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

CONVEYOR_HOST_DEVICE double sub(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

CONVEYOR_HOST_DEVICE double div(double a, double b) {
#ifdef __CUDA_ARCH__
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace conveyor::cuda::exact
