// Test-only fault injection for the engine's own tests (see engine_api.hpp).
#include "harness/gpu/check.hpp"
#include "harness/gpu/engine_api.hpp"
#include "harness/gpu/engine_kernels.hpp"

namespace harness::gpu::test_hooks {

void delayed_copy_on_unjoined_queue(void* dst, const void* src, std::size_t bytes, double delay_seconds) {
  static hipStream_t q = [] {
    hipStream_t s = nullptr;
    HARNESS_GPU_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    return s;
  }();
  // The spin's tick rate is calibrated by GpuDevice; nanoseconds is right for NVIDIA's globaltimer and
  // within 10x for AMD's 100 MHz wall clock, which is all a delay needs.
  launch_spin(q, static_cast<uint64_t>(delay_seconds * 1e9));
  launch_copy(q, dst, src, bytes);
}

}  // namespace harness::gpu::test_hooks
