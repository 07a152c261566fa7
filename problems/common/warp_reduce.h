// Warp-level helpers shared by kernels: the compile-time lane count and butterfly reductions.
#pragma once
#include "problems/common/portability.h"

#if defined(HARNESS_GPU)
// Lanes per warp as a compile-time constant, for sizing per-lane register arrays and tiles.
// Kernels that rely on it check it against the runtime warpSize (see require_warp_size).
HD constexpr int kernel_warp_size() {
#if defined(__AMDGCN_WAVEFRONT_SIZE)
  return __AMDGCN_WAVEFRONT_SIZE;
#else
  return 32;  // NVIDIA, and the host pass (which never runs kernels)
#endif
}

// Traps when the compile-time lane count disagrees with the hardware (never expected).
__device__ inline void require_warp_size() {
  if (warpSize != kernel_warp_size()) {
#if defined(__CUDA_ARCH__)
    __trap();
#else
    __builtin_trap();
#endif
  }
}

// Reductions over aligned groups of Width lanes (Width a power of two, at most warpSize). Every lane
// of the warp must call them together.
template <int Width>
__device__ inline float group_max(float v) {
  for (int o = Width / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor(v, o, Width));
  return v;
}
template <int Width>
__device__ inline float group_sum(float v) {
  for (int o = Width / 2; o > 0; o >>= 1) v += __shfl_xor(v, o, Width);
  return v;
}
__device__ inline float warp_max(float v) { return group_max<kernel_warp_size()>(v); }
__device__ inline float warp_sum(float v) { return group_sum<kernel_warp_size()>(v); }
#endif
