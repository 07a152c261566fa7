// Planted fault: correct output except one NaN element (within the official 5% mismatch allowance,
// which must not let a NaN pass).
#include "tests/planted/planted_mla.hpp"

namespace {
__global__ void one_nan_kernel(uint16_t* out) { out[0] = 0x7fc0; }
}  // namespace

static size_t workspace_bytes(const MlaDecodeConfig& c) { return planted::no_workspace(c); }
static void launch(const MlaDecodeArgs& a) {
  planted::launch_attention(a);
  one_nan_kernel<<<1, 1>>>(a.out);
  if (hipGetLastError() != hipSuccess) throw std::runtime_error("one_nan_kernel launch failed");
}
MLA_DECODE_VARIANT("planted_nan", gpu, "planted fault: one NaN in an otherwise correct output",
                   "q,kv_bf16,kv_indptr,qo_indptr", ::harness::kVariantPlanted);
