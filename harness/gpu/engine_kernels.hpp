// The GPU engine's own kernels (copy, spin, hash), launched on a given queue. For .hip sources.
#pragma once
#include <cstddef>
#include <cstdint>

#include "harness/gpu/runtime_api.hpp"

namespace harness::gpu {

// dst <- src, bytes bytes; 16-byte vector accesses when both pointers allow it.
void launch_copy(hipStream_t q, void* dst, const void* src, std::size_t bytes);

// Reads every 16-byte word of [p, p + bytes) (bytes a multiple of 16) and keeps nothing: fills the caches with
// clean lines of p, writing back whatever dirty lines they evict.
void launch_read_sweep(hipStream_t q, const void* p, std::size_t bytes);

// One thread spins until `ticks` of the device's constant-rate timer have passed (nanoseconds on
// NVIDIA's globaltimer; wall_clock64 ticks on AMD). The caller calibrates ticks per second.
void launch_spin(hipStream_t q, uint64_t ticks);

// A kernel that does nothing, over `blocks` x `threads`: what one launch costs inside a timed call.
void launch_empty(hipStream_t q, unsigned blocks, unsigned threads);

// Content hash of a device byte range: per-block partial hashes on the GPU, combined in order on the
// host. Deterministic; sensitive to value and position. Owns its scratch buffers.
class DeviceHasher {
 public:
  DeviceHasher() = default;
  DeviceHasher(const DeviceHasher&) = delete;
  DeviceHasher& operator=(const DeviceHasher&) = delete;
  ~DeviceHasher();
  // Enqueues the hash on q, then waits for q only.
  uint64_t hash(hipStream_t q, const void* p, std::size_t bytes);

 private:
  void reserve(std::size_t blocks);
  uint64_t* partials_ = nullptr;       // device
  uint64_t* host_partials_ = nullptr;  // pinned, so the copy back stays on q
  std::size_t capacity_ = 0;
};

}  // namespace harness::gpu
