// Device-to-device copy used to measure the bandwidth ceiling (and by the engine tests); the read sweep of the
// clean cache flush.
#include <algorithm>
#include <stdexcept>

#include "harness/gpu/check.hpp"
#include "harness/gpu/engine_api.hpp"
#include "harness/gpu/engine_kernels.hpp"

namespace harness::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 4;  // independent 16-byte loads in flight per thread

__global__ void copy16_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t n) {
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * kPerThread + threadIdx.x;
  uint4 v[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * blockDim.x;
    if (i < n) v[k] = src[i];
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * blockDim.x;
    if (i < n) dst[i] = v[k];
  }
}

__global__ void copy1_kernel(uint8_t* __restrict__ dst, const uint8_t* __restrict__ src, std::size_t n) {
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

// The words' XOR decides a store, so the loads cannot be dropped; the caller makes sure it never happens.
__global__ void read_sweep_kernel(const uint4* __restrict__ src, std::size_t n, uint32_t never, uint32_t* sink) {
  uint32_t x = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = src[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == never) *sink = x;
}

}  // namespace

void launch_read_sweep(hipStream_t q, const void* p, std::size_t bytes) {
  if (bytes % 16 != 0 || reinterpret_cast<uintptr_t>(p) % 16 != 0)
    throw std::invalid_argument("launch_read_sweep: 16-byte aligned whole words only");
  // The sweep's words XOR to 0 where its buffer is zeros; a sink that is never written (a store of
  // 0x5a5a5a5a would need those words to XOR to it) keeps the loads without a result buffer of its own.
  read_sweep_kernel<<<4096, kThreads, 0, q>>>(static_cast<const uint4*>(p), bytes / 16, 0x5a5a5a5au,
                                             static_cast<uint32_t*>(const_cast<void*>(p)));
  HARNESS_GPU_CHECK_LAUNCH("read_sweep_kernel");
}

void launch_copy(hipStream_t q, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const bool aligned = (reinterpret_cast<uintptr_t>(dst) % 16 == 0) && (reinterpret_cast<uintptr_t>(src) % 16 == 0);
  const std::size_t n16 = aligned ? bytes / 16 : 0;
  if (n16 > 0) {
    const std::size_t per_block = static_cast<std::size_t>(kThreads) * kPerThread;
    const std::size_t blocks = (n16 + per_block - 1) / per_block;
    if (blocks > 0x7fffffffull) throw std::runtime_error("launch_copy: range too large");
    copy16_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, q>>>(static_cast<uint4*>(dst),
                                                                   static_cast<const uint4*>(src), n16);
    HARNESS_GPU_CHECK_LAUNCH("copy16_kernel");
  }
  const std::size_t done = n16 * 16;
  if (done < bytes) {
    const std::size_t rest = bytes - done;
    const std::size_t blocks = std::min<std::size_t>((rest + kThreads - 1) / kThreads, 4096);
    copy1_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, q>>>(static_cast<uint8_t*>(dst) + done,
                                                                  static_cast<const uint8_t*>(src) + done, rest);
    HARNESS_GPU_CHECK_LAUNCH("copy1_kernel");
  }
}

}  // namespace harness::gpu

void harness::gpu::copy_on_default_queue(void* dst, const void* src, std::size_t bytes) {
  launch_copy(default_queue(), dst, src, bytes);
}
