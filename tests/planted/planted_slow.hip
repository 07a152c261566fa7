// Planted slow variant: correct, but computes the whole output three times.
#include "tests/planted/planted_mla.hpp"

static size_t workspace_bytes(const MlaDecodeConfig& c) { return planted::no_workspace(c); }
static void launch(const MlaDecodeArgs& a) {
  for (int pass = 0; pass < 3; ++pass) planted::launch_attention(a);
}
MLA_DECODE_VARIANT("planted_slow", gpu, "planted: correct, three full passes (about 3x the time)",
                   "q,kv_bf16,kv_indptr,qo_indptr", ::harness::kVariantPlanted);
