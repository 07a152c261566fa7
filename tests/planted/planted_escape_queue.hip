// Planted fault: the work runs on a separate non-blocking queue that the default queue never waits
// for (a delay, then the correct output), so the timing events finish before the output exists.
#include "harness/gpu/check.hpp"
#include "tests/planted/planted_mla.hpp"

namespace {
__global__ void delay_kernel(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

hipStream_t side_queue() {
  static hipStream_t q = [] {
    hipStream_t s = nullptr;
    HARNESS_GPU_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    return s;
  }();
  return q;
}
}  // namespace

static size_t workspace_bytes(const MlaDecodeConfig& c) { return planted::no_workspace(c); }
static void launch(const MlaDecodeArgs& a) {
  const hipStream_t q = side_queue();
  delay_kernel<<<1, 1, 0, q>>>(5LL * 1000 * 1000);  // a few ms at GPU clock rates
  HARNESS_GPU_CHECK_LAUNCH("delay_kernel");
  planted::launch_attention(a, {}, q);
}
MLA_DECODE_VARIANT("planted_escape_queue", gpu, "planted fault: work on an unjoined side queue",
                   "q,kv_bf16,kv_indptr,qo_indptr", ::harness::kVariantPlanted);
