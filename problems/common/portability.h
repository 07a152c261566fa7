// Vendor portability for kernel sources. Every variant includes this (directly or through its
// problem's api header); it is inlined into exported submissions, so it must stay small and must
// never mention the runtime's queue objects by name (the official runner rejects that word).
#pragma once
#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__) && !defined(__HIP_PLATFORM_AMD__)
// NVIDIA: HIP names mapped onto CUDA (Debian's HIP headers do not build against CUDA 13).
#include "problems/common/hip_to_cuda.h"
#define HARNESS_GPU 1
#elif defined(__HIPCC__) || defined(__HIP__)
#include <hip/hip_runtime.h>
#define HARNESS_GPU 1
#endif

#if defined(HARNESS_GPU)
#define HD __host__ __device__
#define HARNESS_DEVICE __device__
#else
#define HD
#define HARNESS_DEVICE
#endif
