// The runtime names the GPU engine needs beyond problems/common/hip_to_cuda.h: queues, pinned host
// memory, graphs and (CUDA) the profiler range. Engine-only (harness/gpu/*.hip): kernel sources never include this file, so
// these names stay out of submissions.
#pragma once
#include "problems/common/portability.h"

#if defined(HARNESS_BACKEND_CUDA)
#include <cuda_profiler_api.h>
#define hipProfilerStart cudaProfilerStart
#define hipProfilerStop cudaProfilerStop
using hipStream_t = cudaStream_t;
using hipGraph_t = cudaGraph_t;
using hipGraphExec_t = cudaGraphExec_t;
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamPerThread cudaStreamPerThread
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamEndCapture cudaStreamEndCapture
#define hipStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define hipGraphInstantiate(exec, graph, a, b, c) cudaGraphInstantiate(exec, graph, 0)
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphExecDestroy cudaGraphExecDestroy
#define hipGraphDestroy cudaGraphDestroy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemsetAsync cudaMemsetAsync
#define hipMemGetInfo cudaMemGetInfo
#define hipHostFree cudaFreeHost
inline cudaError_t hipHostMalloc(void** p, size_t bytes, unsigned /*flags*/) { return cudaMallocHost(p, bytes); }
#endif

// Set (by CMake) when the build sends <<<...>>> launches to the per-thread default queue, which can be
// captured into a graph; the compiler's own macro must agree, or events and launches use different queues.
#if defined(HARNESS_PER_THREAD_DEFAULT_QUEUE) != \
    (defined(CUDA_API_PER_THREAD_DEFAULT_STREAM) || defined(HIP_API_PER_THREAD_DEFAULT_STREAM))
#error "HARNESS_PER_THREAD_DEFAULT_QUEUE and the compiler's default-queue flag disagree"
#endif

namespace harness::gpu {
// The queue that variants launch on with <<<grid, block, smem>>> and that the timing events use.
inline hipStream_t default_queue() {
#if defined(HARNESS_PER_THREAD_DEFAULT_QUEUE)
  return hipStreamPerThread;
#else
  return nullptr;
#endif
}
}  // namespace harness::gpu
