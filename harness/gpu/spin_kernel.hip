// The empty kernel (the launch-latency probe) and a GPU-side wait (like nvbench's blocking kernel): queued between the cache flush and the start
// event so that the host's launches are queued before the timed region begins.
#include "harness/gpu/check.hpp"
#include "harness/gpu/engine_kernels.hpp"

namespace harness::gpu {
namespace {

__device__ inline uint64_t device_timer() {
#if defined(HARNESS_BACKEND_CUDA)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#elif defined(__HIP_DEVICE_COMPILE__)
  // wall_clock64 is -1 where the target lacks a constant-rate counter; the shader clock then serves
  // (the rate is calibrated either way).
  const long long t = wall_clock64();
  return static_cast<uint64_t>(t >= 0 ? t : clock64());
#else
  return 0;  // host pass of a device function: never runs
#endif
}

__global__ void spin_kernel(uint64_t ticks) {
  const uint64_t t0 = device_timer();
  while (device_timer() - t0 < ticks) {
  }
}

__global__ void empty_kernel() {}

}  // namespace

void launch_empty(hipStream_t q, unsigned blocks, unsigned threads) {
  empty_kernel<<<blocks, threads, 0, q>>>();
  HARNESS_GPU_CHECK_LAUNCH("empty_kernel");
}

void launch_spin(hipStream_t q, uint64_t ticks) {
  spin_kernel<<<1, 1, 0, q>>>(ticks);
  HARNESS_GPU_CHECK_LAUNCH("spin_kernel");
}

}  // namespace harness::gpu
