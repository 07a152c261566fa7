// Planted fault: computes on the first call only and returns without writing on later calls.
#include "tests/planted/planted_mla.hpp"

static size_t workspace_bytes(const MlaDecodeConfig& c) { return planted::no_workspace(c); }
static void launch(const MlaDecodeArgs& a) {
  static bool computed = false;
  if (computed) return;
  planted::launch_attention(a);
  computed = true;
}
MLA_DECODE_VARIANT("planted_output_cache", gpu, "planted fault: computes once, later calls write nothing",
                   "q,kv_bf16,kv_indptr,qo_indptr", ::harness::kVariantPlanted);
