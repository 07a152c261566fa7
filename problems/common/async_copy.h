// Global -> shared copies that overlap with compute where the hardware has them (cp.async on
// NVIDIA sm_80+); elsewhere plain loads and stores, so the same pipeline code runs synchronously.
#pragma once
#include "problems/common/portability.h"

#if defined(HARNESS_GPU)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define ASYNC_COPY_NVIDIA 1
#endif

__device__ inline void async_copy_16(void* smem_dst, const void* gmem_src) {
#if defined(ASYNC_COPY_NVIDIA)
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(gmem_src) : "memory");
#else
  *static_cast<uint4*>(smem_dst) = *static_cast<const uint4*>(gmem_src);
#endif
}

__device__ inline void async_copy_4(void* smem_dst, const void* gmem_src) {
#if defined(ASYNC_COPY_NVIDIA)
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(gmem_src) : "memory");
#else
  *static_cast<uint32_t*>(smem_dst) = *static_cast<const uint32_t*>(gmem_src);
#endif
}

// Closes the group of copies issued since the last commit.
__device__ inline void async_commit() {
#if defined(ASYNC_COPY_NVIDIA)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most Pending committed groups are still in flight.
template <int Pending>
__device__ inline void async_wait() {
#if defined(ASYNC_COPY_NVIDIA)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}
#endif
