// Device content hash. Each block hashes one chunk: thread t folds the 8-byte words t, t+256, ...
// of the chunk in order (seeded by t), the block XORs the finalised per-thread values. The host folds
// the per-block values in block order and the byte count. Unaligned or ragged ranges are read
// bytewise into little-endian words, zero-padded, so equal bytes give equal hashes everywhere.
#include <stdexcept>

#include "harness/gpu/check.hpp"
#include "harness/gpu/engine_kernels.hpp"

namespace harness::gpu {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kWordsPerThread = 128;
constexpr std::size_t kChunkBytes = kThreads * kWordsPerThread * 8;  // 256 KiB per block

HD inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

HD inline uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

__device__ inline uint64_t load_word(const uint8_t* p, std::size_t word, std::size_t bytes, bool aligned) {
  const std::size_t off = word * 8;
  if (aligned && off + 8 <= bytes) return reinterpret_cast<const uint64_t*>(p)[word];
  uint64_t w = 0;
  for (int b = 0; b < 8; ++b)
    if (off + b < bytes) w |= static_cast<uint64_t>(p[off + b]) << (8 * b);
  return w;
}

__global__ void hash_kernel(const uint8_t* __restrict__ p, std::size_t bytes, bool aligned, uint64_t* partials) {
  __shared__ uint64_t lane_hash[kThreads];
  const std::size_t words = (bytes + 7) / 8;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * (kChunkBytes / 8);
  uint64_t h = fmix64(0x9e3779b97f4a7c15ull + threadIdx.x);
  for (std::size_t k = 0; k < kWordsPerThread; ++k) {
    const std::size_t w = first + threadIdx.x + k * kThreads;
    if (w >= words) break;
    h = rotl64(h ^ (load_word(p, w, bytes, aligned) * 0x87c37b91114253d5ull), 31) * 0x4cf5ad432745937full;
  }
  lane_hash[threadIdx.x] = fmix64(h);
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) lane_hash[threadIdx.x] ^= lane_hash[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = lane_hash[0];
}

}  // namespace

DeviceHasher::~DeviceHasher() {
  // Destructors must not throw; a failing free here leaves nothing to recover.
  if (partials_) (void)hipFree(partials_);
  if (host_partials_) (void)hipHostFree(host_partials_);
}

void DeviceHasher::reserve(std::size_t blocks) {
  if (blocks <= capacity_) return;
  if (partials_) HARNESS_GPU_CHECK(hipFree(partials_));
  if (host_partials_) HARNESS_GPU_CHECK(hipHostFree(host_partials_));
  partials_ = nullptr;
  host_partials_ = nullptr;
  capacity_ = 0;
  HARNESS_GPU_CHECK(hipMalloc(reinterpret_cast<void**>(&partials_), blocks * sizeof(uint64_t)));
  HARNESS_GPU_CHECK(hipHostMalloc(reinterpret_cast<void**>(&host_partials_), blocks * sizeof(uint64_t), 0));
  capacity_ = blocks;
}

uint64_t DeviceHasher::hash(hipStream_t q, const void* p, std::size_t bytes) {
  uint64_t h = fmix64(0x6a09e667f3bcc908ull ^ bytes);
  if (bytes == 0) return h;
  const std::size_t blocks = (bytes + kChunkBytes - 1) / kChunkBytes;
  if (blocks > 0x7fffffffull) throw std::runtime_error("DeviceHasher: range too large");
  reserve(blocks);
  const bool aligned = reinterpret_cast<uintptr_t>(p) % 8 == 0;
  hash_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, q>>>(static_cast<const uint8_t*>(p), bytes, aligned,
                                                                 partials_);
  HARNESS_GPU_CHECK_LAUNCH("hash_kernel");
  HARNESS_GPU_CHECK(hipMemcpyAsync(host_partials_, partials_, blocks * sizeof(uint64_t), hipMemcpyDeviceToHost, q));
  HARNESS_GPU_CHECK(hipStreamSynchronize(q));
  for (std::size_t i = 0; i < blocks; ++i) h = fmix64(h ^ host_partials_[i]) * 0x100000001b3ull + i;
  return fmix64(h);
}

}  // namespace harness::gpu
