// The few HIP runtime names this project uses, mapped onto CUDA. Kept deliberately small: add a
// name only when a source needs it.
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>

using hipError_t = cudaError_t;
using hipEvent_t = cudaEvent_t;
using hipDeviceProp_t = cudaDeviceProp;
#define hipSuccess cudaSuccess
#define hipGetErrorString cudaGetErrorString
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemset cudaMemset
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipGetDevice cudaGetDevice
#define hipSetDevice cudaSetDevice
#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipEventQuery cudaEventQuery
#define hipErrorNotReady cudaErrorNotReady

// Warp-level intrinsics: HIP's forms take no mask; CUDA needs the full-warp mask.
#define HARNESS_FULL_MASK 0xffffffffu
#define __shfl_xor(v, m, ...) __shfl_xor_sync(HARNESS_FULL_MASK, v, m, ##__VA_ARGS__)
#define __shfl(v, l, ...) __shfl_sync(HARNESS_FULL_MASK, v, l, ##__VA_ARGS__)
#define __shfl_down(v, d, ...) __shfl_down_sync(HARNESS_FULL_MASK, v, d, ##__VA_ARGS__)
#define __shfl_up(v, d, ...) __shfl_up_sync(HARNESS_FULL_MASK, v, d, ##__VA_ARGS__)
