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

// The float and double forms of one operation: on the device the intrinsic that is never fused (FLOAT_RN,
// DOUBLE_RN), on the host the operator itself (OP). One rule for every operation, so that no form can miss
// its intrinsic.
#ifdef __CUDA_ARCH__
#define CONVEYOR_EXACT_OPERATION(NAME, OP, FLOAT_RN, DOUBLE_RN)                \
  CONVEYOR_HOST_DEVICE float NAME(float a, float b) { return FLOAT_RN(a, b); } \
  CONVEYOR_HOST_DEVICE double NAME(double a, double b) { return DOUBLE_RN(a, b); }
#else
#define CONVEYOR_EXACT_OPERATION(NAME, OP, FLOAT_RN, DOUBLE_RN)        \
  CONVEYOR_HOST_DEVICE float NAME(float a, float b) { return a OP b; } \
  CONVEYOR_HOST_DEVICE double NAME(double a, double b) { return a OP b; }
#endif

CONVEYOR_EXACT_OPERATION(mul, *, __fmul_rn, __dmul_rn)
CONVEYOR_EXACT_OPERATION(add, +, __fadd_rn, __dadd_rn)
CONVEYOR_EXACT_OPERATION(sub, -, __fsub_rn, __dsub_rn)
#undef CONVEYOR_EXACT_OPERATION

// In double only: a float quotient is computed in double (the promotion picks this form).
CONVEYOR_HOST_DEVICE double div(double a, double b) {
#ifdef __CUDA_ARCH__
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace conveyor::cuda::exact
